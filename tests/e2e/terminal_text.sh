#!/usr/bin/env bash
# Text from files and the database reaches the terminal without control
# characters: a label and a suite carrying ESC/BEL/CR sequences come out of
# list, show and a parser error as '?', never as raw bytes.
source "$(dirname "$0")/lib.bash"
evil=$(printf 'evil\033[2J\007\r')
set +e; "$PPB" run "$SRC/suites/smoke.yaml" --backend cpu --no-progress --db "$WORK/r.db" \
  --filter 'dtype=fp16,query_len=17' --label "$evil" >/dev/null 2>&1; set -e
no_control() { # no_control FILE WHAT
  if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$1"; then fail "$2 printed a control character"; fi
}
expect_rc 0 "$PPB" list --db "$WORK/r.db"
no_control "$WORK/out" "list"
grep -q 'evil?\[2J??' "$WORK/out" || fail "list: the label is not shown escaped: $(cat "$WORK/out")"
expect_rc 0 "$PPB" show 1 --db "$WORK/r.db"
no_control "$WORK/out" "show"
grep -q 'label evil?\[2J??' "$WORK/out" || fail "show: the label is not shown escaped"
printf 'name: x\nkernel: prefix_prefill\n"k\\e[31m": 1\n"k\\e[31m": 2\n' >"$WORK/bad.yaml"
expect_rc 3 "$PPB" list "$WORK/bad.yaml"
no_control "$WORK/err" "a parser error"
grep -q 'k?\[31m: given twice' "$WORK/err" || fail "parser error: $(cat "$WORK/err")"
echo "terminal_text: ok"
