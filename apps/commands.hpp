// The heptane subcommands. Each takes the arguments after its name and returns the process
// exit status (0 success, 1 failure of the work, 2 usage error). Errors go to stderr.
#pragma once

namespace heptane::cli {

int cmd_gen(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_convert(int argc, char** argv);
int cmd_spmv(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_solve(int argc, char** argv);
int cmd_mlem(int argc, char** argv);
int cmd_lsqr(int argc, char** argv);
int cmd_pet(int argc, char** argv);

}  // namespace heptane::cli
