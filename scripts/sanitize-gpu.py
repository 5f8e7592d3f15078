#!/usr/bin/env python3
"""compute-sanitizer over every GPU test (issue #20).

Runs each test ctest labels `gpu` (its command, environment and working directory as ctest has
them, from `ctest --show-only=json-v1`) under `compute-sanitizer --tool TOOL`, which follows
child processes, so the CLI scripts' heptane runs and mpiexec's ranks are checked too. Prints
and writes (OUT/sanitize-TOOL.md, OUT/sanitize-TOOL/*.log) one row per test: passed with 0
errors, sanitizer errors (the ERROR SUMMARY line), failed, skipped (exit 77: what the test said)
or timed out. Exit status 1 if any test reported errors, failed or timed out.

    python3 scripts/sanitize-gpu.py --build build-gpu [--tool memcheck|racecheck|synccheck|initcheck]
        [--jobs 4] [--timeout 300] [--regex R] [--split-cases [--case-regex R]] [--out DIR]

--split-cases: a Boost.Test program is run once per test case (--run_test=CASE, the cases from
its --list_content), each with its own timeout and row "TEST/CASE", so that a program too slow
under racecheck as a whole is still checked to the end case by case; scripts run whole.
--case-regex keeps only the runs whose TEST/CASE name matches (the slow cases alone, with a
longer --timeout: started with setsid on the device machine, such a run outlives one device
call and is read back by the next ones, see docs/benchmarks.md's sanitizer row).

racecheck leaves out cuSPARSE's kernels (--kernel-name-exclude kns=cusparse): it reports
hazards inside cusparse::load_balancing_kernel, library code.

The sanitizer runs without --error-exitcode: a test's exit status stays its own, and under an
MPI launcher (each rank under the sanitizer, see under_sanitizer) a rank with a report does not
make mpiexec kill the others before they print their own ERROR SUMMARY. The verdict on the
sanitizer comes from the summaries, which must number at least the ranks started. memcheck
reports, as API errors, the cudaErrorNoKernelImageForDevice that NCCL's own
cudaFuncGetAttributes calls get inside ncclCommInitRank (NCCL probing kernels built for other
architectures; NCCL handles the error itself): an API error whose backtrace reaches libnccl
before any other library or program frame is counted apart, "in NCCL", not as heptane's.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time


def cases_of(program, cwd):
    """The leaf test cases of a Boost.Test program ("suite/case" paths), or None when it is
    not one (a script)."""
    if not os.path.basename(program).startswith("test_"):
        return None
    try:
        p = subprocess.run([program, "--list_content"], cwd=cwd, capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    paths, stack = [], []
    for line in (p.stdout + p.stderr).splitlines():
        m = re.match(r"^( *)(\w+)\*?\s*$", line)
        if not m:
            continue
        depth = len(m.group(1)) // 4
        stack = stack[:depth] + [m.group(2)]
        paths.append("/".join(stack))
    return [c for c in paths if not any(o.startswith(c + "/") for o in paths)] or None


def split(t, build):
    """t as one entry per test case (name TEST/CASE, --run_test=CASE), or [t]."""
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    cases = cases_of(t["command"][0], props.get("WORKING_DIRECTORY", build))
    if not cases:
        return [t]
    return [dict(t, name=t["name"] + "/" + c, command=t["command"] + ["--run_test=" + c])
            for c in cases]


MPI_LAUNCHERS = ("mpiexec", "mpirun", "orterun")


def is_mpi(command):
    return any(os.path.basename(c) in MPI_LAUNCHERS for c in command)


def ranks(command):
    """The processes a direct `mpiexec -n N program` starts (N), else 1."""
    for i, c in enumerate(command[:-1]):
        if is_mpi(command[:1]) and c in ("-n", "-np", "--np", "-c"):
            try:
                return int(command[i + 1])
            except ValueError:
                return 1
    return 1


def nccl_api_errors(out):
    """How many of the sanitizer's reports in `out` are CUDA API errors raised inside NCCL: a
    "Program hit ... on CUDA API call" whose first host frame outside libcuda is in libnccl."""
    n = 0
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if "Program hit" not in line or "CUDA API call" not in line:
            continue
        for f in lines[i + 1:i + 40]:
            if "Host Frame" not in f:
                if "Saved host backtrace" in f:
                    continue
                break
            if "libcuda.so" in f:
                continue
            n += "libnccl" in f
            break
    return n


def under_sanitizer(san, command, wrapper, reports):
    """The test's command with the sanitizer where it can see the GPU work.

    A test started by an MPI launcher (mpiexec ... program, or a script given the launcher and
    the program as arguments) has its program replaced by a wrapper that runs
    `compute-sanitizer ... program "$@"`, so that each rank is sanitized under mpiexec: with the
    sanitizer around mpiexec itself, the 2-4 rank tests gave no result within 330 s on 4 H200
    (a normal run takes 10-47 s). Each rank's sanitizer writes its report to a file of its own,
    `reports` + ".PID.san" (the wrapper's process id, which exec keeps): in one shared output
    the reports of 4 ranks interleaved line by line, so that a backtrace could no longer be
    told apart from another rank's. Any other test runs under the sanitizer whole."""
    if not is_mpi(command):
        return san + command
    for i, c in enumerate(command[1:], start=1):
        if (os.path.basename(c) not in MPI_LAUNCHERS and os.path.isfile(c)
                and os.access(c, os.X_OK)):
            with open(wrapper, "w") as f:
                f.write("#!/bin/sh\nexec %s --log-file %s.$$.san %s \"$@\"\n"
                        % (" ".join(shlex.quote(x) for x in san), shlex.quote(reports),
                           shlex.quote(c)))
            os.chmod(wrapper, 0o755)
            return command[:i] + [wrapper] + command[i + 1:]
    return san + command


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build-gpu")
    ap.add_argument("--tool", default="memcheck",
                    choices=["memcheck", "racecheck", "synccheck", "initcheck"])
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--timeout", type=int, default=300, help="seconds per test")
    ap.add_argument("--regex", default="", help="only tests whose name matches")
    ap.add_argument("--out", default=".")
    ap.add_argument("--split-cases", action="store_true",
                    help="one run per Boost.Test case of each test program")
    ap.add_argument("--case-regex", default="",
                    help="with --split-cases: only the runs (TEST/CASE, or TEST where a test "
                    "is not split) whose name matches")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    info = json.loads(subprocess.check_output(
        ["ctest", "--show-only=json-v1", "-L", "gpu"], cwd=build, text=True))
    logs = os.path.join(a.out, "sanitize-" + a.tool)
    os.makedirs(logs, exist_ok=True)
    # no --error-exitcode: the exit status stays the test's own, the verdict on the sanitizer
    # comes from its summaries (one per sanitized process)
    san = ["compute-sanitizer", "--tool", a.tool, "--print-limit", "20"]
    if a.tool == "racecheck":
        san += ["--kernel-name-exclude", "kns=cusparse"]

    tests = [t for t in info["tests"] if re.search(a.regex, t["name"])]
    if a.split_cases:
        tests = [c for t in tests for c in split(t, build) if re.search(a.case_regex, c["name"])]

    def run(t):
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        env = os.environ.copy()
        for e in props.get("ENVIRONMENT", []):
            k, v = e.split("=", 1)
            env[k] = v
        cwd = props.get("WORKING_DIRECTORY", build)
        log = os.path.join(logs, t["name"].replace("/", "--") + ".log")
        t0 = time.time()
        stem = log[:-len(".log")]
        for f in glob.glob(glob.escape(stem) + ".*.san"):  # an earlier run's rank reports
            os.remove(f)
        command = under_sanitizer(san, t["command"], stem + ".wrap.sh", stem)
        # a session of its own, so that a timeout kills the sanitizer and the tests under it
        p = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, errors="replace",
                             start_new_session=True)
        try:
            out, _ = p.communicate(timeout=a.timeout)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            rc = None
        secs = time.time() - t0
        # the ranks' own reports (MPI tests), each parsed on its own, kept in the log after
        # the output
        reports = []
        for f in sorted(glob.glob(glob.escape(stem) + ".*.san")):
            with open(f, errors="replace") as r:
                reports.append(r.read())
            os.remove(f)
        with open(log, "w") as f:
            f.write(" ".join(command) + "\n" + out)
            for k, r in enumerate(reports):
                f.write("\n---- sanitized process %d of %d: its report ----\n%s"
                        % (k + 1, len(reports), r))
        summary = r"(?:ERROR|RACECHECK) SUMMARY: (\d+) (?:errors|hazards)"
        summaries = [n for text in [out] + reports for n in re.findall(summary, text)]
        in_nccl = sum(nccl_api_errors(text) for text in [out] + reports)
        everything = "\n".join([out] + reports)
        errors = sum(int(s) for s in summaries) - in_nccl
        apart = " (%d API errors in NCCL, apart)" % in_nccl if in_nccl else ""
        if rc is None:
            verdict = "TIMEOUT"
        elif rc == 77 or (rc == 255 and "before first instrumented API call" in everything
                          and re.search(r"skipp", out, re.I)):
            # a test that skips before touching CUDA: the sanitizer reports exit 255
            why = [l for l in out.splitlines() if "skip" in l.lower()]
            verdict = "skipped" + (": " + why[0].strip()[:120] if why else "")
        elif errors > 0:
            verdict = "ERRORS (%d)" % errors
        elif rc == 0 and len(summaries) < ranks(t["command"]):
            verdict = "NO RESULT (%d sanitizer summaries, %d processes)" % (
                len(summaries), ranks(t["command"]))
        elif rc != 0:
            verdict = "FAILED (exit %d)" % rc
        else:
            verdict = "passed, 0 errors" + apart
        return t["name"], verdict, secs, len(summaries)

    rows = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        # printed as they finish, so that a run cut short still shows what was done
        for fut in concurrent.futures.as_completed([pool.submit(run, t) for t in tests]):
            name, verdict, secs, n = fut.result()
            rows.append((name, verdict, secs, n))
            print("%-34s %-40s %7.1f s (%d sanitized processes)" % (name, verdict, secs, n),
                  flush=True)
    rows.sort()
    bad = [r for r in rows if not (r[1].startswith("passed") or r[1].startswith("skipped"))]
    md = os.path.join(a.out, "sanitize-%s.md" % a.tool)
    with open(md, "w") as f:
        f.write("| test | compute-sanitizer --tool %s | seconds | processes |\n|---|---|---|---|\n"
                % a.tool)
        for name, verdict, secs, n in rows:
            f.write("| %s | %s | %.1f | %d |\n" % (name, verdict, secs, n))
        f.write("\n%d tests: %d passed with 0 errors, %d skipped, %d with errors, failed or "
                "timed out\n" % (len(rows), sum(r[1].startswith("passed") for r in rows),
                                 sum(r[1].startswith("skipped") for r in rows), len(bad)))
    print(open(md).read().splitlines()[-1])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
