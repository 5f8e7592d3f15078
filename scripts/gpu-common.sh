# shellcheck shell=bash disable=SC2034,SC2154  # the variables are the caller's (see below)
# Helpers of the one-device-call GPU scripts (amg-gpu.sh, amg-petsc-gpu.sh, one-gpu.sh,
# setup-gpu.sh), sourced once they are in the repository root: `. scripts/gpu-common.sh`.
# They work on the caller's variables: $out (the output folder), $build (the CMake build
# folder), $prefix (PETSc's install prefix), and $logs, $summary and $status, which gpu_init
# sets. Nothing runs when the file is sourced.

# note words...: print a line and append it to $summary.
note() { echo "$*" | tee -a "$summary"; }

# finish code: pack $logs into $out/logs.tar.gz (the folder removed once packed), exit code.
finish() {
  tar czf "$out/logs.tar.gz" -C "$out" logs 2>/dev/null && rm -rf "$logs"
  exit "$1"
}

# gpu_init: logs=$out/logs (created), summary=$out/summary.txt (emptied), status=0.
gpu_init() {
  mkdir -p "$out/logs"
  logs=$out/logs
  summary=$out/summary.txt
  : >"$summary"
  status=0
}

# gpu_petsc label: unless $prefix holds lib/pkgconfig/PETSc.pc or petsc.pc, build PETSc 3.18.5
# (CPU, MPI) there from .tools/ (log: $logs/petsc-build.log; `finish 1` when it fails) and note
# "label built in N s"; then put $prefix on PKG_CONFIG_PATH and LD_LIBRARY_PATH (exported).
gpu_petsc() {
  if ! [ -f "$prefix/lib/pkgconfig/PETSc.pc" ] && ! [ -f "$prefix/lib/pkgconfig/petsc.pc" ]; then
    local t work
    t=$(date +%s)
    work=$(mktemp -d /tmp/petsc-build.XXXXXX)
    PETSC_BUILD_DIR=$work bash scripts/petsc-build.sh .tools/petsc-3.18.5.tar.xz "$prefix" \
      >"$logs/petsc-build.log" 2>&1 || { note "PETSc build FAILED"; tail -20 "$logs/petsc-build.log"; finish 1; }
    rm -rf "$work"
    note "$1 built in $(($(date +%s) - t)) s"
  fi
  export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

# gpu_cmake on_fail jobs regex [cmake -D options...]: configure $build (Release, then the
# options) into $logs/configure.log, copy its lines matching the extended regex (none when it
# is empty) to the summary, and build with that many jobs into $logs/build.log. A failure is
# noted with the configure log's last 30 lines or the build log's error lines, then the script
# exits 1: on_fail `finish` through finish 1; on_fail `keep` with $logs left as it is after a
# failed configure, and packed into $out/logs.tar.gz (the folder kept) after a failed build.
gpu_cmake() {
  local on_fail=$1 jobs=$2 regex=$3
  shift 3
  case "$on_fail" in
    finish | keep) ;;
    *) echo "gpu_cmake: on_fail is finish or keep, not $on_fail" >&2; exit 2 ;;
  esac
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" >"$logs/configure.log" 2>&1 || {
    note "configure FAILED"
    tail -30 "$logs/configure.log"
    [ "$on_fail" = finish ] && finish 1
    exit 1
  }
  [ -z "$regex" ] || grep -E "$regex" "$logs/configure.log" | tee -a "$summary"
  cmake --build "$build" -j "$jobs" >"$logs/build.log" 2>&1 || {
    note "build FAILED"
    grep -E "error" "$logs/build.log" | head -40 | tee -a "$summary"
    [ "$on_fail" = finish ] && finish 1
    tar czf "$out/logs.tar.gz" -C "$out" logs
    exit 1
  }
}

# gpu_ctest labels regex jobs: ctest -L labels -R regex in $build (300 s a test, that many in
# parallel) into $logs/ctest.log (status=1 when a test fails), its tally lines to the summary
# and the time it took noted.
gpu_ctest() {
  local t
  t=$(date +%s)
  (cd "$build" && ctest -L "$1" -R "$2" --output-on-failure --timeout 300 -j "$3") \
    >"$logs/ctest.log" 2>&1 || status=1
  grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Skipped|Not Run" "$logs/ctest.log" | tee -a "$summary"
  note "tests: $(($(date +%s) - t)) s"
}

# gpu_bench_precond name args...: `$build/apps/heptane bench precond args` into
# $out/precond-name.md, .csv and .json (stderr: $logs/precond-name.err; status=1 when it fails),
# noted with its time and arguments; the caller copies the table rows it wants to the summary.
gpu_bench_precond() {
  local name=$1 t
  shift
  t=$(date +%s)
  "$build/apps/heptane" bench precond "$@" --csv "$out/precond-$name.csv" --json "$out/precond-$name.json" \
    >"$out/precond-$name.md" 2>"$logs/precond-$name.err" || status=1
  note "## $name ($(($(date +%s) - t)) s): $*"
}
