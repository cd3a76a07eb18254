#!/usr/bin/env bash
# cmake --install: the program, its suites (targets, models, proposals) and docs
# land under the prefix, and the installed program runs an installed suite.
source "$(dirname "$0")/lib.bash"
build=$(dirname "$PPB")
expect_rc 0 cmake --install "$build" --prefix "$WORK/inst"
inst=$WORK/inst
[ -x "$inst/bin/ppbench" ] || fail "no bin/ppbench"
for f in share/ppbench/suites/smoke.yaml share/ppbench/suites/targets/bi-v100.yaml \
         share/ppbench/suites/proposals/seed-prefill-bi-v100.yaml share/doc/ppbench/README.md \
         share/doc/ppbench/KERNEL-ABI.md share/doc/ppbench/ppb_kernel_abi.h share/bash-completion/completions/ppbench; do
  [ -s "$inst/$f" ] || fail "$f was not installed"
done
[ ! -e "$inst/share/doc/ppbench/results" ] || fail "benchmark databases installed with the docs"
expect_rc 0 "$inst/bin/ppbench" run "$inst/share/ppbench/suites/smoke.yaml" --backend cpu --quiet --db "$WORK/i.db" \
  --filter "batch=1,query_len=17,dtype=bf16"
expect_rc 1 "$inst/bin/ppbench" check "$inst/share/ppbench/suites/prefill.yaml" --target bi-v100
grep -q "configs infeasible on bi-v100" "$WORK/out" || fail "installed target profile not found"

# Issue 36 item 9: the installed program finds the suites and proposals it installs by name (not a path).
mkdir -p "$WORK/elsewhere" && cd "$WORK/elsewhere"
for name in smoke smoke.yaml; do
  expect_rc 0 "$inst/bin/ppbench" list "$name"
  [ "$(wc -l <"$WORK/out")" -gt 10 ] || fail "list $name: $(cat "$WORK/out" "$WORK/err")"
done
expect_rc 0 "$inst/bin/ppbench" run smoke --backend cpu --quiet --db "$WORK/n.db" --filter "batch=1,query_len=17,dtype=bf16"
[ "$(sqlite3 "$WORK/n.db" "SELECT suite_path FROM runs")" = "$(realpath "$inst/share/ppbench/suites/smoke.yaml")" ] \
  || fail "run smoke did not run the installed suite: $(sqlite3 "$WORK/n.db" "SELECT suite_path FROM runs")"
expect_rc 1 "$inst/bin/ppbench" check nightly --target bi-v100
grep -q "configs infeasible on bi-v100" "$WORK/out" || fail "check nightly by name"
expect_rc 10 "$inst/bin/ppbench" propose cpu-seed-decode-partition-mismatch --backend cpu --db "$WORK/n.db"
grep -q "^verdict: REJECT" "$WORK/out" || fail "propose by name"
# A file of that name here comes first; a name that is nowhere says so.
printf 'not: a suite\n' >smoke
expect_rc 3 "$inst/bin/ppbench" list smoke
rm smoke
expect_rc 3 "$inst/bin/ppbench" list no-such-suite
cd "$WORK"

# The man page, made from docs/CLI.md: every command of `ppbench --help` in it, no troff warning.
man1="$inst/share/man/man1/ppbench.1"
[ -s "$man1" ] || fail "no man page installed"
if command -v groff >/dev/null; then
  LC_ALL=C.UTF-8 groff -man -Tutf8 -ww "$man1" 2>"$WORK/groff.err" | sed 's/.\x08//g' >"$WORK/man.txt"
  [ ! -s "$WORK/groff.err" ] || { cat "$WORK/groff.err"; fail "groff warns about the man page"; }
  for cmd in $("$inst/bin/ppbench" --help | awk '/^  [a-z]/ {print $1}'); do
    grep -qE "^ {7}$cmd( |$)" "$WORK/man.txt" || fail "the man page lacks '$cmd'"
  done
  grep -q "^EXIT CODES" "$WORK/man.txt" && grep -q "^ENVIRONMENT VARIABLES" "$WORK/man.txt" || fail "man page sections"
fi

# Plugin authors: the ABI headers and pkg-config; the example plugin builds against the installed
# headers alone and the installed program loads it.
for f in include/ppbench/ppb_kernel_abi.h include/ppbench/attention_args.h include/ppbench/kv_append.h \
         include/ppbench/kv_layout.h include/ppbench/ppb_rng.h share/pkgconfig/ppbench-kernel-abi.pc; do
  [ -s "$inst/$f" ] || fail "$f was not installed"
done
if command -v pkg-config >/dev/null && command -v cc >/dev/null; then
  cflags=$(PKG_CONFIG_PATH="$inst/share/pkgconfig" pkg-config --cflags ppbench-kernel-abi) || fail "pkg-config --cflags"
  read -r cflags <<<"$cflags"   # no trailing blank
  [ "$(realpath "${cflags#-I}")" = "$(realpath "$inst/include/ppbench")" ] || fail "cflags $cflags"
  [ "$(PKG_CONFIG_PATH="$inst/share/pkgconfig" pkg-config --variable=abi_version ppbench-kernel-abi)" = \
    "$(sed -n 's/^#define PPBK_ABI_VERSION \([0-9]*\)$/\1/p' "$SRC/kernels/ppb_kernel_abi.h")" ] || fail "abi_version"
  mkdir -m 700 "$WORK/plug"
  # shellcheck disable=SC2086 # cflags is a list of options
  cc -shared -fPIC $cflags "$SRC/tests/plugin/example_cpu_plugin.c" -o "$WORK/plug/libppbk_example_cpu.so" -lm \
    || fail "the example plugin does not build against the installed headers"
  # shellcheck disable=SC2086
  cc -shared -fPIC -DSTAGES_NEW_TOKENS -DPLUGIN_NAME='"example-cpu-staged"' $cflags "$SRC/tests/plugin/example_cpu_plugin.c" -o "$WORK/staged.so" -lm \
    || fail "the staging example (kv_append.h and what it includes) does not build against the installed headers"
  expect_rc 0 "$inst/bin/ppbench" impls --plugin "$WORK/plug"
  grep -q "example-cpu" "$WORK/out" || fail "the installed program does not list the plugin: $(cat "$WORK/out")"
fi
echo "install: ok"
