#!/usr/bin/env bash
# Plugins end to end on the CPU backend (docs/KERNEL-ABI.md): the example CPU
# plugin through impls, run, propose and report; every loader error named; a
# crashing plugin named, and contained by --devices.
source "$(dirname "$0")/lib.bash"
PLUG=$(dirname "$PPB")/tests/plugins
BAD=$(dirname "$PPB")/tests/plugins-bad
[ -f "$PLUG/libppbk_example_cpu.so" ] || fail "the example plugin was not built in $PLUG"
export PPBENCH_DB="$WORK/p.db"

# impls: builtin and the example with its table; broken libraries with their reasons, exit 1.
expect_rc 0 "$PPB" impls --plugin "$PLUG"
grep -q "^builtin " "$WORK/out" || fail "builtin not listed"
grep -q "^plugin:example-cpu .*prefix_prefill,paged_attention_v1,paged_attention_v2 *cpu *6 " "$WORK/out" \
  || { cat "$WORK/out"; fail "example plugin not listed with kernels, backend and ABI"; }
grep -q "checksum fnv1a64:[0-9a-f]\{16\}" "$WORK/out" || fail "no checksum"
grep -A3 "^plugin:example-cpu-flash " "$WORK/out" | grep -q "prefix_prefill,paged_attention_v1,paged_attention_v2: the paged KV cache in the FLASH layout" \
  || { cat "$WORK/out"; fail "impls does not say which plugin reads the FLASH layout"; }
grep -A3 "^plugin:example-cpu " "$WORK/out" | grep -q "FLASH layout" && fail "impls says example-cpu reads the FLASH layout"
grep -A4 "^plugin:example-cpu-staged " "$WORK/out" | grep -q "prefix_prefill: reads the new tokens' K/V from a cache it stages" \
  || { cat "$WORK/out"; fail "impls does not say which plugin stages its cache"; }
grep -A4 "^plugin:example-cpu-flash " "$WORK/out" | grep -q "stages" && fail "impls says example-cpu-flash stages a cache"

expect_rc 1 "$PPB" impls --plugin "$BAD"
for why in "no symbol ppbk_entry" "kernel ABI version 999" "returned no table" "invalid implementation name"; do
  grep -q "$why" "$WORK/out" || { cat "$WORK/out"; fail "impls did not say '$why'"; }
done
# A plugin built against kernel ABI version 2 still loads (through the adapter), and says so.
grep -q "^plugin:abi2-plugin .*prefix_prefill,paged_attention_v1 *cpu *2 " "$WORK/out" \
  && grep -q "(kernel ABI 2: loaded through the version-2 adapter)" "$WORK/out" \
  || { cat "$WORK/out"; fail "the version-2 plugin is not listed as usable through the adapter"; }

# run: every smoke case on the plugin, checked against the float64 reference.
total=$("$PPB" list "$SRC/suites/smoke.yaml" | wc -l)
expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --plugin "$PLUG" --impl plugin:example-cpu --backend cpu --no-progress
# ok or noisy (CPU timings on a loaded machine), nothing else
grep -q "^$total results:" "$WORK/out" && ! grep "^$total results:" "$WORK/out" | grep -Eq "wrong|error|refused|skipped|crashed" \
  || { cat "$WORK/out"; fail "not every case correct and timed on the plugin"; }
n_impl=$(sqlite3 "$PPBENCH_DB" "SELECT count(*) FROM cases WHERE impl='plugin:example-cpu' AND key LIKE '% impl=plugin:example-cpu'")
[ "$n_impl" -eq "$total" ] || fail "impl column/key: $n_impl of $total"
sqlite3 "$PPBENCH_DB" "SELECT value FROM env WHERE key='after.impl.example-cpu.checksum_fnv1a64'" | grep -q '^[0-9a-f]\{16\}$' \
  || fail "the plugin's checksum is not in the run's environment"
# The plugin and the built-in kernels agree with each other on the same inputs (the GPU cross-check script).
expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --backend cpu --no-progress
run_p=$("$PPB" list | awk 'NR==3 {print $1}'); run_b=$("$PPB" list | awk 'NR==2 {print $1}')
PPBENCH_PLUGIN_PATH="$PLUG" expect_rc 0 "$PY" "$SRC/tests/gpu/crosscheck.py" "$PPB" "$PPBENCH_DB" "$run_b" "$run_p"
grep -q "^crosscheck: $total of $total pairs agree" "$WORK/out" || { cat "$WORK/out"; fail "cross-check"; }
# Decode v1/v2 and the PARTITION_SIZE mismatch cases (guard zones around the plugin's scratch).
set +e; "$PPB" run "$SRC/suites/smoke-decode.yaml" --plugin "$PLUG" --impl plugin:example-cpu --backend cpu --no-progress >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
[ "$rc" -le 1 ] || { cat "$WORK/err"; fail "decode on the plugin exited $rc"; }
grep -q "kernel wrote [0-9]* B past tmp_out" "$WORK/out" || { cat "$WORK/out"; fail "the plugin's overrun was not measured"; }
if grep -E "^(wrong|error)" "$WORK/out" | grep -v "hp=\(64\|512\)" | grep -q .; then
  cat "$WORK/out"; fail "a decode case without an overrun failed on the plugin"
fi

# The same kernels behind a kernel ABI version-2 table (tests/plugin/example_cpu_plugin_abi2.c): loaded
# through the adapter, every prefill case correct, and decode v1/v2 as above (the v2 scratch included).
abi2=(--plugin "$PLUG/libppbk_example_cpu_abi2.so" --impl plugin:example-cpu-abi2 --backend cpu --no-progress)
expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --db "$WORK/abi2.db" "${abi2[@]}"
grep -q "^$total results:" "$WORK/out" && ! grep "^$total results:" "$WORK/out" | grep -Eq "wrong|error|refused|skipped|crashed" \
  || { cat "$WORK/out"; fail "not every case correct and timed on the version-2 plugin"; }
set +e; "$PPB" run "$SRC/suites/smoke-decode.yaml" --db "$WORK/abi2.db" "${abi2[@]}" >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
[ "$rc" -le 1 ] || { cat "$WORK/err"; fail "decode on the version-2 plugin exited $rc"; }
grep -q "kernel wrote [0-9]* B past tmp_out" "$WORK/out" || { cat "$WORK/out"; fail "version-2 plugin: overrun not measured"; }
if grep -E "^(wrong|error)" "$WORK/out" | grep -v "hp=\(64\|512\)" | grep -q .; then
  cat "$WORK/out"; fail "a decode case without an overrun failed on the version-2 plugin"
fi

# Kernels that read the paged cache in the FLASH layout (example-cpu-flash, ABI version 5's kv_layout) get it
# filled so, the same values at the same places: every case correct, prefill and decode. The same kernels not
# saying so (example-cpu-flash-undeclared) read vLLM's layout as if it were FLASH: wrong.
flash=(--plugin "$PLUG" --backend cpu --no-progress --db "$WORK/flash.db")
expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --impl plugin:example-cpu-flash "${flash[@]}"
grep -q "^$total results:" "$WORK/out" && ! grep "^$total results:" "$WORK/out" | grep -Eq "wrong|error|refused|skipped|crashed" \
  || { cat "$WORK/out"; fail "not every case correct on the FLASH-layout plugin"; }
set +e; "$PPB" run "$SRC/suites/smoke-decode.yaml" --impl plugin:example-cpu-flash "${flash[@]}" >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
[ "$rc" -le 1 ] || { cat "$WORK/err"; fail "decode on the FLASH-layout plugin exited $rc"; }
grep -Eq "^ok|^noisy" "$WORK/out" || { cat "$WORK/out"; fail "no decode case ran on the FLASH-layout plugin"; }
if grep -E "^(wrong|error)" "$WORK/out" | grep -v "hp=\(64\|512\)" | grep -q .; then
  cat "$WORK/out"; fail "a decode case without an overrun failed on the FLASH-layout plugin"
fi
# (wrong where the cache is read: the cases with a context; without one only q, k and v are.)
with_ctx=$("$PPB" list "$SRC/suites/smoke.yaml" | grep -vc " ctx=0 ")
[ "$with_ctx" -gt 0 ] || fail "smoke.yaml has no case with a cached context"
expect_rc 1 "$PPB" run "$SRC/suites/smoke.yaml" --impl plugin:example-cpu-flash-undeclared "${flash[@]}"
grep -q "^$total results:.* $with_ctx wrong" "$WORK/out" \
  || { cat "$WORK/out"; fail "a plugin reading an undeclared layout was not found wrong on the $with_ctx cases with a context"; }

# A kernel that reads the new tokens from the cache too (example-cpu-staged: ABI version 6's stage builds
# that cache from ppbench's inputs, as vLLM's cache write does): every prefill case correct, mixed batch included.
expect_rc 0 "$PPB" run "$SRC/suites/smoke.yaml" --impl plugin:example-cpu-staged "${flash[@]}"
grep -q "^$total results:" "$WORK/out" && ! grep "^$total results:" "$WORK/out" | grep -Eq "wrong|error|refused|skipped|crashed" \
  || { cat "$WORK/out"; fail "not every case correct on the staging plugin"; }
grep -q "^ok .* dec=2 " "$WORK/out" || { cat "$WORK/out"; fail "the mixed batch did not run on the staging plugin"; }
# In a proposal of three sessions a side, each session's inputs staged once and their launches alternated.
set +e; "$PPB" propose "$SRC/tests/data/proposals/staged-sessions.yaml" --plugin "$PLUG" --backend cpu --db "$WORK/staged.db" \
  >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
case $rc in 0|10|11) ;; *) cat "$WORK/err" "$WORK/out"; fail "propose on the staging plugin exited $rc";; esac
grep -q "^verdict: " "$WORK/out" || { cat "$WORK/out" "$WORK/err"; fail "no verdict on the staging plugin"; }

# Without the library: an input error naming it and where it was looked for, before anything runs (exit 3),
# from --impl and from a proposal's side alike.
expect_rc 3 "$PPB" run "$SRC/suites/smoke.yaml" --db "$WORK/none.db" --impl plugin:example-cpu --backend cpu --no-progress --filter "batch=1,dtype=bf16,head_dim=64,page_size=16,sliding_window=0"
grep -q "^ppbench run: --impl: impl plugin:example-cpu: no plugin named 'example-cpu' on the search path (.*/plugins" "$WORK/err" \
  || { cat "$WORK/err"; fail "missing plugin not named"; }
[ -s "$WORK/out" ] && { cat "$WORK/out"; fail "a run without its plugin printed results"; }
[ -e "$WORK/none.db" ] && fail "a run without its plugin stored something"
cat >"$WORK/missing-side.yaml" <<EOF
name: missing-side
kind: kernel_config
suite: $SRC/suites/smoke.yaml
filter: "batch=1,dtype=bf16,head_dim=64,page_size=16,sliding_window=0"
baseline: {block_m: 16, block_n: 32, num_warps: 4}
candidate: {impl: "plugin:example-cpu", block_m: 16, block_n: 32, num_warps: 4}
EOF
expect_rc 3 "$PPB" propose "$WORK/missing-side.yaml" --db "$WORK/none.db" --backend cpu
grep -q "^ppbench propose: $WORK/missing-side.yaml: candidate.impl: impl plugin:example-cpu: no plugin named 'example-cpu'" \
  "$WORK/err" || { cat "$WORK/err"; fail "a proposal's missing plugin not named with its field"; }

# propose builtin vs the plugin, then its report.
set +e; "$PPB" propose "$SRC/tests/data/proposals/plugin-vs-builtin.yaml" --plugin "$PLUG" --backend cpu --json "$WORK/pv.json" >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
case $rc in 0|10|11) ;; *) cat "$WORK/err" "$WORK/out"; fail "propose exited $rc";; esac
# The verdict names what each side ran: the builtin side no plugin, the candidate the example's facts.
python3 -c "import json,sys; i=json.load(open(sys.argv[1]))['implementations']; \
assert i['baseline'] == {} and i['candidate']['impl.example-cpu.version'] and len(i['candidate']['impl.example-cpu.checksum_fnv1a64']) == 16, i" \
  "$WORK/pv.json" || fail "the verdict JSON does not name the implementations"
grep -q "^verdict: " "$WORK/out" || fail "no verdict"
pid=$(sqlite3 "$PPBENCH_DB" "SELECT max(id) FROM proposals")
expect_rc 0 "$PPB" report --proposal "$pid" -o "$WORK/report"
grep -q "example-cpu" "$WORK/report/index.html" || fail "the report does not name the implementation"

# A --plugin path that is not there, or a FIFO / device: a usage error, not ignored, never a hang.
expect_rc 2 "$PPB" impls --plugin "$WORK/no-such-plugin.so"
grep -q "ppbench: --plugin $WORK/no-such-plugin.so: No such file or directory" "$WORK/err" || fail "missing --plugin: $(cat "$WORK/err")"
mkfifo "$WORK/fifo.so"
expect_rc 2 timeout 20 "$PPB" impls --plugin "$WORK/fifo.so"
expect_rc 2 timeout 20 "$PPB" impls --plugin=/dev/zero
grep -q "neither a library file nor a folder" "$WORK/err" || fail "--plugin /dev/zero: $(cat "$WORK/err")"

# A plugin that writes outside its output and into its input: every case wrong, saying where.
expect_rc 1 "$PPB" run "$SRC/suites/smoke.yaml" --db "$WORK/scribble.db" --plugin "$BAD/libppbk_bad_scribble.so" \
  --impl plugin:bad-scribble --backend cpu --no-progress --filter "batch=1,dtype=bf16,head_dim=64,page_size=16"
[ "$(sqlite3 "$WORK/scribble.db" "SELECT count(*) FROM results WHERE status = 'wrong' AND reason LIKE \
  '%impl bad-scribble wrote outside its buffers: 1 B before out, 1 B past out, 2 B before block_table; it changed its inputs q (guard zones and input checks caught it)%'")" -gt 0 ] \
  || { sqlite3 "$WORK/scribble.db" "SELECT status, reason FROM results LIMIT 3"; fail "outside writes not caught"; }
[ "$(sqlite3 "$WORK/scribble.db" "SELECT count(*) FROM results WHERE status != 'wrong'")" = 0 ] \
  || fail "a scribbling case was not wrong"

# calibrate on a plugin: its separate `ppbench run` process gets the same --plugin paths, so the
# repeatability compares the plugin's cases (it once found no plugin there and said "nan% over 0 cases").
cat >"$WORK/plugin-suite.yaml" <<YAML
name: plugin-calibrate
kernel: prefix_prefill
shapes:
  - {batch: 2, query_len: 17, context_len: 37, heads: 4/2, head_dim: 64, dtype: bf16}
configs:
  - {impl: "plugin:example-cpu", block_m: 16, block_n: 32, num_warps: 4}
measure: {cold_l2: false, warmup_ms: 1, min_samples: 3, max_samples: 20, min_time_ms: 5, budget_ms: 100, target_noise: 1}
YAML
set +e; "$PPB" calibrate "$WORK/plugin-suite.yaml" --plugin "$PLUG" --db "$WORK/cal.db" --backend cpu --pairs 2 \
  --effect-pairs 1 --effects 0.5 --min-case-ms 0.0001 >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
[ $rc -le 1 ] || { cat "$WORK/out" "$WORK/err"; fail "calibrate on a plugin exited $rc"; }
grep -Eq "^repeatability \(two separate processes\): median run-to-run difference [0-9.]+%, .* over 1 cases$" "$WORK/out" \
  || { cat "$WORK/out" "$WORK/err"; fail "calibrate's separate run did not compare the plugin's case"; }

# Asking for one plugin runs no other library's code: in a folder only the file named for it is
# loaded (here a neighbour whose constructor would leave a mark). A library or folder others may
# write to is not loaded at all, unless PPBENCH_TRUST_PLUGINS=1.
mkdir -p "$WORK/pdir"
cp "$PLUG/libppbk_example_cpu.so" "$WORK/pdir/"
printf '#include <stdio.h>\n__attribute__((constructor)) static void mark(void) { FILE *f = fopen("%s", "w"); if (f) fclose(f); }\n' \
  "$WORK/constructor-ran" >"$WORK/evil.c"
cc -shared -fPIC -o "$WORK/pdir/libppbk_evil.so" "$WORK/evil.c"
one=(run "$SRC/suites/smoke.yaml" --db "$WORK/one.db" --impl plugin:example-cpu --backend cpu --no-progress --filter "batch=1,dtype=bf16,head_dim=64,page_size=16")
expect_rc 0 "$PPB" "${one[@]}" --plugin "$WORK/pdir"
[ ! -e "$WORK/constructor-ran" ] || fail "another library's constructor ran"
chmod g+w "$WORK/pdir"
expect_rc 3 "$PPB" "${one[@]}" --plugin "$WORK/pdir"
grep -q "not loaded: $WORK/pdir is writable by its group (chmod go-w it)" "$WORK/err" || { cat "$WORK/err"; fail "group-writable folder loaded"; }
PPBENCH_TRUST_PLUGINS=1 expect_rc 0 "$PPB" "${one[@]}" --plugin "$WORK/pdir"
chmod g-w "$WORK/pdir"; chmod o+w "$WORK/pdir/libppbk_example_cpu.so"
expect_rc 3 "$PPB" "${one[@]}" --plugin "$WORK/pdir"
grep -q "libppbk_example_cpu.so is writable by everyone" "$WORK/err" || { cat "$WORK/err"; fail "world-writable library loaded"; }
[ ! -e "$WORK/constructor-ran" ] || fail "another library's constructor ran"

# A plugin that never returns: Ctrl-C still ends the run (exit 130), naming it, without --devices.
"$PPB" run "$SRC/suites/smoke.yaml" --db "$WORK/hang.db" --plugin "$BAD/libppbk_bad_hang.so" --impl plugin:bad-hang \
  --backend cpu --no-progress --filter "batch=1,dtype=bf16,head_dim=64,page_size=16" >"$WORK/out" 2>"$WORK/err" &
pid=$!
for _ in $(seq 100); do [ -s "$WORK/hang.db" ] && break; sleep 0.1; done
sleep 1
kill -INT "$pid"
set +e; timeout 30 tail --pid="$pid" -f /dev/null; wait "$pid"; rc=$?; set -e
[ "$rc" = 130 ] || { cat "$WORK/err"; fail "a hanging plugin: exit $rc after SIGINT, expected 130"; }
grep -q "stopped while kernel implementation 'bad-hang' was still in launch" "$WORK/err" || { cat "$WORK/err"; fail "hang not named"; }
# ... and the database says so: the case stored as hung with the reason, the run interrupted (resumable).
[ "$(sqlite3 "$WORK/hang.db" "SELECT status || ': ' || reason FROM results ORDER BY id DESC LIMIT 1")" = \
  "hung: stopped while kernel implementation 'bad-hang' was still in launch (it did not return within 3 s of the stop); the run did not finish" ] \
  || { sqlite3 "$WORK/hang.db" "SELECT status, reason FROM results"; fail "the hung case was not stored as hung"; }
[ "$(sqlite3 "$WORK/hang.db" "SELECT status FROM runs")" = interrupted ] || fail "the run with a hung case is not interrupted"

# A plugin that calls exit(0) in a launch: a failure naming it, never exit 0.
expect_rc 4 "$PPB" run "$SRC/suites/smoke.yaml" --db "$WORK/exit.db" --plugin "$BAD/libppbk_bad_exit.so" --impl plugin:bad-exit --backend cpu --no-progress
grep -q "kernel implementation 'bad-exit' called exit() in launch: the run did not finish" "$WORK/err" || { cat "$WORK/err"; fail "exit not named"; }
[ "$(sqlite3 "$WORK/exit.db" "SELECT status || ': ' || reason FROM results ORDER BY id DESC LIMIT 1")" = \
  "crashed: kernel implementation 'bad-exit' called exit() in launch: the run did not finish" ] \
  || { sqlite3 "$WORK/exit.db" "SELECT status, reason FROM results"; fail "the exit() case was not stored as crashed"; }
[ "$(sqlite3 "$WORK/exit.db" "SELECT status FROM runs")" = interrupted ] || fail "the run a plugin exit()ed is not interrupted"

# A plugin that crashes: named before the process dies; contained by workers.
set +e; "$PPB" run "$SRC/suites/smoke.yaml" --db "$WORK/crash.db" --plugin "$BAD/libppbk_bad_crash.so" --impl plugin:bad-plugin --backend cpu --no-progress >"$WORK/out" 2>"$WORK/err"; rc=$?; set -e
[ "$rc" -ge 128 ] || fail "the crash did not end the process (exit $rc)"
grep -q "kernel implementation 'bad-plugin' crashed in launch" "$WORK/err" || { cat "$WORK/err"; fail "crash not named"; }
expect_rc 1 "$PPB" run "$SRC/suites/smoke.yaml" --db "$WORK/crash2.db" --plugin "$BAD/libppbk_bad_crash.so" --impl plugin:bad-plugin --backend cpu --devices 0,1 --no-progress
grep -q "^$total results:" "$WORK/out" || { cat "$WORK/out"; fail "the run did not go on after the plugin crashed"; }
grep -q "^crashed" "$WORK/out" || fail "no case stored as crashed"
echo "plugin: ok"
