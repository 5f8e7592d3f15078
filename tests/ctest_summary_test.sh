#!/usr/bin/env bash
# scripts/ctest_summary.py on a made-up ctest JUnit file: passes, failures and skips counted
# apart (a skip is not a pass), skipped tests named, an expected group with no test fails.
set -u
script=$1
py=/usr/bin/python3
[ -x "$py" ] || py=python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/ok.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="(empty)" tests="3" failures="0" disabled="0" skipped="1">
  <testcase name="test_a" classname="test_a" time="0.1" status="run"/>
  <testcase name="test_b" classname="test_b" time="0.1" status="run"/>
  <testcase name="test_b_gpu" classname="test_b_gpu" time="0.0" status="notrun"><skipped message="skip"/></testcase>
</testsuite>
XML
sed 's#<testcase name="test_b" classname="test_b" time="0.1" status="run"/>#<testcase name="test_b" classname="test_b" time="0.1" status="fail"><failure message="x"/></testcase>#' \
  "$dir/ok.xml" >"$dir/fail.xml"
fail=0
check() {  # description, expected status, expected output pattern, then the command
  local what=$1 want=$2 pattern=$3
  shift 3
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" != "$want" ] || ! grep -Eq "$pattern" <<<"$out"; then
    echo "FAIL: $what (rc $rc, want $want; pattern '$pattern'):"
    echo "$out"
    fail=1
  fi
}
check "all passed but one skipped" 0 "3 tests: 2 passed, 0 failed, 1 skipped" "$py" "$script" "$dir/ok.xml"
check "the skipped test is named" 0 "skipped: test_b_gpu" "$py" "$script" "$dir/ok.xml"
check "a failure fails" 1 "1 passed, 1 failed, 1 skipped" "$py" "$script" "$dir/fail.xml"
check "an expected group with tests" 0 "group 'plugin': 5 tests registered" "$py" "$script" "$dir/ok.xml" --expect plugin=5
check "an expected group without tests fails" 1 "MISSING: no test of group 'scipy'" "$py" "$script" "$dir/ok.xml" --expect plugin=5 --expect scipy=0
check "a bad argument is a usage error" 2 "bad argument" "$py" "$script" "$dir/ok.xml" --expect
[ "$fail" = 0 ] && echo "ctest_summary: all checks passed"
exit "$fail"
