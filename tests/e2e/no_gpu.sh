#!/usr/bin/env bash
# Issue 36 item 8: a newcomer without a GPU gets a real answer from the README. Runs the
# commands of README.md's "No GPU?" block as written (on the CPU backend, from a fresh
# folder: ./ppbench.db, out/), and asserts each answers: runs exit 0, every proposal
# ends ACCEPT or REJECT (never INCONCLUSIVE, never an error), the seed's mismatch is
# REJECTed with its overrun measured, trend and report exit 0. About a minute on 2 cores.
source "$(dirname "$0")/lib.bash"
block=$(awk '/^## No GPU\?/{s=1; next} s && /^## /{exit} s && /^```sh/{c=1; next} c && /^```/{exit} c' "$SRC/README.md")
[ -n "$block" ] || fail "README.md has no \"No GPU?\" section with a sh block"
n=0
start=$(date +%s)
while IFS= read -r line; do
  line=${line%%#*}
  line=${line%"${line##*[! ]}"}
  [ -n "$line" ] || continue
  read -ra args <<<"$line"
  [ "${args[0]}" = build/ppbench ] || fail "not a ppbench command: $line"
  args[0]=$PPB
  args=("${args[@]/#suites\//$SRC/suites/}")
  cmd=${args[1]}
  # On the CPU even where a GPU answers: the block is the no-GPU answer.
  case $cmd in run|propose) args+=(--backend cpu);; esac
  set +e; t0=$(date +%s); "${args[@]}" >"$WORK/cmd.out" 2>"$WORK/cmd.err"; rc=$?; set -e
  echo "$line: exit $rc in $(( $(date +%s) - t0 )) s"
  case $cmd in
    propose)
      verdict=$(sed -n 's/^verdict: //p' "$WORK/cmd.out")
      case $verdict in ACCEPT|REJECT) ;; *) cat "$WORK/cmd.out" "$WORK/cmd.err"; fail "$line: verdict '$verdict', expected ACCEPT or REJECT";; esac
      [ "$rc" -eq "$([ "$verdict" = ACCEPT ] && echo 0 || echo 10)" ] || fail "$line: exit $rc for $verdict"
      case $line in *cpu-seed-decode-partition-mismatch*)
        [ "$verdict" = REJECT ] && grep -q "PARTITION_SIZE mismatch: host 512, kernel 256: kernel wrote [0-9]* B past tmp_out" "$WORK/cmd.out" \
          || { cat "$WORK/cmd.out"; fail "the mismatch is not rejected for its overrun"; };;
      esac;;
    *) [ "$rc" -eq 0 ] || { cat "$WORK/cmd.out" "$WORK/cmd.err"; fail "$line: exit $rc"; };;
  esac
  n=$((n + 1))
done <<<"$block"
[ "$n" -ge 6 ] || fail "only $n commands in the block"
grep -q "seed-prefix-prefill" <<<"$block" || fail "the block runs no CPU-sized seed proposal"
[ -s "$WORK/out/cpu/index.html" ] || fail "no report at out/cpu"
# Every run and proposal of the block ran on the CPU backend, in ./ppbench.db.
[ "$(sqlite3 ppbench.db "SELECT count(*) FROM runs WHERE backend <> 'cpu'")" = 0 ] || fail "a run not on the CPU"
echo "no_gpu: ok, $n commands in $(( $(date +%s) - start )) s"
