/* The schema of the results database, as an ordered list of migration steps
 * (docs/STORE.md). store.c applies the steps a database lacks, each in its own
 * transaction, and records the version reached in PRAGMA user_version.
 *
 * Append-only: never edit a step that has been released; add a new one at
 * the end (PPB_STORE_SCHEMA_VERSION, store.h, is the number of steps). */
#include "store_internal.h"

/* Version 1: runs, the cases they measured, one result per (run, case), the
 * raw timing samples, and the environment of each run.
 *
 * Case fields get one column each, named as in the field table of case.h
 * (text names for enum-valued fields, NULL where the field does not apply to
 * the kernel). The key stays the source of truth; the columns are for queries
 * and exports. A REAL column holds NULL where the value was NaN (SQLite stores
 * NaN as NULL; store.c reads NULL back as NaN). */
static const char schema_v1[] =
    "CREATE TABLE runs("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT," /* ids are never reused, even after a delete */
    "  suite_path TEXT NOT NULL DEFAULT '',"
    "  suite_name TEXT NOT NULL DEFAULT '',"
    "  suite_hash TEXT NOT NULL DEFAULT '',"
    "  git_commit TEXT NOT NULL DEFAULT '',"
    "  host TEXT NOT NULL DEFAULT '',"
    "  backend TEXT NOT NULL DEFAULT '',"
    "  device TEXT NOT NULL DEFAULT '',"
    "  target TEXT NOT NULL DEFAULT '',"
    "  label TEXT NOT NULL DEFAULT '',"
    "  started_at TEXT NOT NULL,"
    "  finished_at TEXT," /* NULL while running */
    "  status TEXT NOT NULL,"
    "  args TEXT NOT NULL DEFAULT '',"
    "  n_cases INTEGER NOT NULL DEFAULT 0"
    ");"
    "CREATE TABLE cases("
    "  id INTEGER PRIMARY KEY,"
    "  key TEXT NOT NULL UNIQUE,"
    "  kernel TEXT NOT NULL,"
    "  batch INTEGER, query_len INTEGER, context_len INTEGER, seq_len INTEGER, ragged TEXT,"
    "  num_heads INTEGER, num_kv_heads INTEGER, head_dim INTEGER, dtype TEXT, page_size INTEGER,"
    "  sliding_window INTEGER,"
    "  block_m INTEGER, block_n INTEGER, num_warps INTEGER,"
    "  version INTEGER, num_threads INTEGER, partition_size INTEGER, host_partition_size INTEGER,"
    "  path TEXT,"
    "  weight REAL NOT NULL DEFAULT 1.0" /* the latest weight seen; results.weight is per run */
    ");"
    "CREATE TABLE results("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  case_id INTEGER NOT NULL REFERENCES cases(id),"
    "  weight REAL NOT NULL DEFAULT 1.0," /* the case weight in this run's suite */
    "  status TEXT NOT NULL,"
    "  reason TEXT NOT NULL DEFAULT '',"
    "  timing_is_cpu INTEGER NOT NULL DEFAULT 0,"
    "  n_samples INTEGER NOT NULL DEFAULT 0,"
    "  dropped_throttled INTEGER NOT NULL DEFAULT 0,"
    "  batch_launches INTEGER NOT NULL DEFAULT 1,"
    "  median_ms REAL, mean_ms REAL, stdev_ms REAL, min_ms REAL, max_ms REAL, q1_ms REAL,"
    "  q3_ms REAL, rel_noise REAL, tflops REAL, gbps REAL,"
    "  check_checked INTEGER NOT NULL DEFAULT 0,"
    "  check_pass INTEGER NOT NULL DEFAULT 0,"
    "  check_max_abs_err REAL, check_rel_l2_err REAL,"
    "  check_rows_checked INTEGER NOT NULL DEFAULT 0,"
    "  check_rows_total INTEGER NOT NULL DEFAULT 0,"
    "  check_nonfinite INTEGER NOT NULL DEFAULT 0,"
    "  check_unwritten INTEGER NOT NULL DEFAULT 0,"
    "  check_atol REAL, check_rtol REAL,"
    "  stored_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),"
    "  UNIQUE(run_id, case_id)"
    ");"
    /* trend and compare look a case up across runs */
    "CREATE INDEX results_by_case ON results(case_id);"
    /* one row per sample: exact (REAL is an IEEE double) and queryable */
    "CREATE TABLE samples("
    "  result_id INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,"
    "  idx INTEGER NOT NULL,"
    "  ms REAL,"
    "  PRIMARY KEY(result_id, idx)"
    ") WITHOUT ROWID;"
    "CREATE TABLE env("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  key TEXT NOT NULL,"
    "  value TEXT NOT NULL,"
    "  PRIMARY KEY(run_id, key)"
    ");";

/* Version 2: what the kernel wrote past its buffers (the PARTITION_SIZE
 * host/kernel mismatch) and the compiled kernel's resources. Existing results
 * get "not detected" / "not known". */
static const char schema_v2[] =
    "ALTER TABLE results ADD COLUMN overrun_detected INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE results ADD COLUMN overrun_tmp_out_bytes INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE results ADD COLUMN overrun_exp_sums_bytes INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE results ADD COLUMN overrun_max_logits_bytes INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE results ADD COLUMN overrun_guard_bytes_changed INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE results ADD COLUMN resources_known INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE results ADD COLUMN resources_registers INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE results ADD COLUMN resources_static_smem INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE results ADD COLUMN resources_dynamic_smem INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE results ADD COLUMN resources_local_bytes INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE results ADD COLUMN resources_max_threads INTEGER NOT NULL DEFAULT 0;";

/* Version 3: proposal verdicts (ppbench propose / compare). The baseline and
 * candidate samples stay in their two runs; these rows say how they were
 * paired and judged, so a verdict can be re-analysed from the database. */
static const char schema_v3[] =
    "CREATE TABLE proposals("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  name TEXT NOT NULL,"
    "  path TEXT NOT NULL DEFAULT '',"
    "  kind TEXT NOT NULL,"
    "  target TEXT NOT NULL DEFAULT '',"
    "  baseline_run INTEGER REFERENCES runs(id),"
    "  candidate_run INTEGER REFERENCES runs(id),"
    "  verdict TEXT NOT NULL,"
    "  geomean_ratio REAL, geomean_lo REAL, geomean_hi REAL,"
    "  reasons TEXT NOT NULL DEFAULT '',"
    "  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))"
    ");"
    "CREATE TABLE proposal_cases("
    "  proposal_id INTEGER NOT NULL REFERENCES proposals(id) ON DELETE CASCADE,"
    "  idx INTEGER NOT NULL,"
    "  baseline_key TEXT NOT NULL,"
    "  candidate_key TEXT NOT NULL,"
    "  weight REAL NOT NULL DEFAULT 1.0,"
    "  state TEXT NOT NULL,"
    "  class TEXT NOT NULL DEFAULT '',"
    "  ratio REAL, ratio_lo REAL, ratio_hi REAL, p_holm REAL,"
    "  PRIMARY KEY(proposal_id, idx)"
    ") WITHOUT ROWID;";

/* Version 4: a stable identity for each run, and the queue of pushes that
 * failed (ppbench push, merge; docs/CI.md).
 *
 * runs.uid: run ids are per database (AUTOINCREMENT), so two hosts' databases
 * both have a run 1. `ppbench merge` needs to know whether a run of one file is
 * already in another (idempotent merges), so every run gets a random 128-bit
 * id. A trigger fills it for every inserted row that does not bring one (as
 * store.c's begin_run does not), so the store code needs no change; merge
 * inserts rows with their uid, which the trigger leaves alone. Existing runs
 * get theirs when the step is applied.
 *
 * push_queue: a push that failed, to be sent by the next push to the same
 * server. It holds what is needed to regenerate the request (run, URL,
 * format) and never the body or a credential: the body is rebuilt from the
 * database at send time, the token comes from the environment, and URLs with
 * user:password are refused before they are queued. One row per (run, url,
 * format): a second failure updates the row. */
static const char schema_v4[] =
    "ALTER TABLE runs ADD COLUMN uid TEXT;"
    "UPDATE runs SET uid = lower(hex(randomblob(16))) WHERE uid IS NULL;"
    "CREATE UNIQUE INDEX runs_by_uid ON runs(uid);"
    "CREATE TRIGGER runs_fill_uid AFTER INSERT ON runs WHEN NEW.uid IS NULL BEGIN"
    "  UPDATE runs SET uid = lower(hex(randomblob(16))) WHERE id = NEW.id;"
    " END;"
    "CREATE TABLE push_queue("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  url TEXT NOT NULL,"
    "  format TEXT NOT NULL,"
    "  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),"
    "  attempts INTEGER NOT NULL DEFAULT 0," /* HTTP requests made so far */
    "  last_error TEXT NOT NULL DEFAULT '',"
    "  last_attempt_at TEXT,"
    "  UNIQUE(run_id, url, format)"
    ");";

/* Version 5: the implementation a case ran on (builtin, vllm-triton,
 * vllm-cuda, plugin:NAME). Every case stored before ran the built-in kernels;
 * their keys, which leave impl out at builtin, stay valid. */
static const char schema_v5[] = "ALTER TABLE cases ADD COLUMN impl TEXT NOT NULL DEFAULT 'builtin';";

/* Version 6: the shards of one night are one run. A run made with --shard K/N
 * records K, N and its group (the night); `ppbench merge` folds the shards of
 * one group into one run, and run_parts lists the runs (by uid) that went into
 * each such run, so merging the same shard again adds nothing. Earlier runs
 * are unsharded (0/0) and never folded. */
static const char schema_v6[] =
    "ALTER TABLE runs ADD COLUMN shard_index INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE runs ADD COLUMN shard_count INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE runs ADD COLUMN run_group TEXT NOT NULL DEFAULT '';"
    "CREATE TABLE run_parts("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  uid TEXT NOT NULL UNIQUE,"
    "  shard_index INTEGER NOT NULL,"
    "  host TEXT NOT NULL DEFAULT '',"
    "  PRIMARY KEY(run_id, shard_index)"
    ");";

/* Version 7: what a run was for. `run` is a plain `ppbench run` (the nights
 * trend follows and compare takes run-to-run noise from); `proposal` is a side
 * of `ppbench propose`; `calibrate` is anything calibrate made (synthetic
 * slowdowns included). Earlier runs are classified by what wrote them:
 * calibrate's proposals and repeatability runs, proposal sides (their args name
 * the proposal), else plain runs. */
static const char schema_v7[] =
    "ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'run';"
    "UPDATE runs SET kind = 'calibrate' WHERE label LIKE 'proposal calibrate %' OR label = 'calibrate repeatability';"
    "UPDATE runs SET kind = 'proposal' WHERE kind = 'run' AND args LIKE 'proposal=%';";

/* Version 8: where a run's wall time (monotonic, summed over resumes) and each
 * case's went, so a run's overhead is a number: building its inputs, the checked launch against the reference (with
 * preparing), the warm-up, and the sampling loop (its kernel time is the
 * samples). Earlier results have 0. */
static const char schema_v8[] =
    "ALTER TABLE runs ADD COLUMN wall_ms REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE results ADD COLUMN generate_ms REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE results ADD COLUMN check_ms REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE results ADD COLUMN warmup_ms REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE results ADD COLUMN sampling_ms REAL NOT NULL DEFAULT 0;";

/* Version 9: the part of a run's wall time spent storing its results (one
 * transaction per case), so `other` is what is left. Earlier runs have 0. */
static const char schema_v9[] = "ALTER TABLE runs ADD COLUMN store_ms REAL NOT NULL DEFAULT 0;";

/* Version 10: the part of a run's wall time spent opening the device (the
 * driver, its context, NVML): a fixed cost of every process, shown apart from
 * what the harness does per case. Earlier runs have 0. */
static const char schema_v10[] = "ALTER TABLE runs ADD COLUMN open_ms REAL NOT NULL DEFAULT 0;";

/* Version 11: a checksum of each result row as written (its case key, weight,
 * status, reason, every result column and its samples), checked whenever the
 * row is read, so a value changed in place outside ppbench is an error, not a
 * different result. Earlier rows have NULL: they are read unchecked. */
static const char schema_v11[] = "ALTER TABLE results ADD COLUMN row_check TEXT;";

/* Version 12: how a proposal's verdict was decided and what it could see:
 * the rules (verdict.h's min_gain, max_regression, threshold), so its report
 * draws the limits it was judged against, and the smallest change of the
 * weighted mean its run resolves with 80% power. Earlier proposals have NULL:
 * their charts draw no limits and they state no detectable effect. */
static const char schema_v12[] = "ALTER TABLE proposals ADD COLUMN min_gain REAL;"
                                 "ALTER TABLE proposals ADD COLUMN max_regression REAL;"
                                 "ALTER TABLE proposals ADD COLUMN threshold REAL;"
                                 "ALTER TABLE proposals ADD COLUMN detectable REAL;";

/* Version 13: what a verdict used, so that it can be re-derived from the
 * store (`ppbench verdict --recompute`): each A/B sample's session and round;
 * per proposal the rest of its rules, the rule version of the ppbench that
 * decided it (verdict.h's PPB_VERDICT_RULE_VERSION), the sampling design
 * (propose) or the history rules (compare); per case the looks taken and
 * planned, the sessions per side, the between-session sd, the alpha its
 * interval spent, the stopping rule's alpha, and a compared case's run-to-run
 * noise and the plain runs it came from. Earlier rows have NULL: their samples
 * are untagged and their verdicts cannot be recomputed. */
static const char schema_v13[] = "ALTER TABLE samples ADD COLUMN session INTEGER;"
                                 "ALTER TABLE samples ADD COLUMN round INTEGER;"
                                 "ALTER TABLE proposals ADD COLUMN rule_version INTEGER;"
                                 "ALTER TABLE proposals ADD COLUMN alpha REAL;"
                                 "ALTER TABLE proposals ADD COLUMN require_correct INTEGER;"
                                 "ALTER TABLE proposals ADD COLUMN method TEXT;"
                                 "ALTER TABLE proposals ADD COLUMN bootstrap_reps INTEGER;"
                                 "ALTER TABLE proposals ADD COLUMN seed INTEGER;"
                                 "ALTER TABLE proposals ADD COLUMN samples_per_round INTEGER;"
                                 "ALTER TABLE proposals ADD COLUMN min_rounds INTEGER;"
                                 "ALTER TABLE proposals ADD COLUMN max_rounds INTEGER;"
                                 "ALTER TABLE proposals ADD COLUMN sessions INTEGER;"
                                 "ALTER TABLE proposals ADD COLUMN budget_ms REAL;"
                                 "ALTER TABLE proposals ADD COLUMN min_history INTEGER;"
                                 "ALTER TABLE proposals ADD COLUMN max_history INTEGER;"
                                 "ALTER TABLE proposal_cases ADD COLUMN looks_taken INTEGER;"
                                 "ALTER TABLE proposal_cases ADD COLUMN looks_planned INTEGER;"
                                 "ALTER TABLE proposal_cases ADD COLUMN sessions INTEGER;"
                                 "ALTER TABLE proposal_cases ADD COLUMN between_sd REAL;"
                                 "ALTER TABLE proposal_cases ADD COLUMN alpha REAL;"
                                 "ALTER TABLE proposal_cases ADD COLUMN stop_alpha REAL;"
                                 "ALTER TABLE proposal_cases ADD COLUMN noise REAL;"
                                 "ALTER TABLE proposal_cases ADD COLUMN history INTEGER;";

/* Version 14: the mixed batches of vLLM's V1 engine, decode steps beside
 * prefill chunks in one prefill launch (case.h's decode_seqs). Older cases are
 * plain prefills or decodes: NULL, read as 0 from their keys. */
static const char schema_v14[] = "ALTER TABLE cases ADD COLUMN decode_seqs INTEGER;";

/* Version 15: the share of its stopping rule's alpha each case's stopping
 * look spent (alpha spending, rule version 2: harness/decide/sequential.h).
 * It depends on the budget used at each look, which the samples do not
 * keep. Earlier rows have NULL: they spent alpha / their looks planned. */
static const char schema_v15[] = "ALTER TABLE proposal_cases ADD COLUMN look_share REAL;";

/* Version 16: the prefill kernels' software-pipelining depth (num_stages,
 * ppb_kernel_params.h; 0 = each implementation's own choice). Older cases ran
 * at the implementation's own choice: NULL, read as 0 from their keys, which
 * leave it out at 0. */
static const char schema_v16[] = "ALTER TABLE cases ADD COLUMN num_stages INTEGER;";

/* Version 17: each result's judgement on the run's target profile
 * (result.h's ppb_feasibility), made once when the case ran, so a report
 * shows what the run saw rather than judging again against whatever the
 * profile file says today. NULL feasible: not judged (no target, or a row from
 * before this version: its report says so). */
static const char schema_v17[] = "ALTER TABLE results ADD COLUMN feasible INTEGER;"
                                 "ALTER TABLE results ADD COLUMN blocks_per_sm INTEGER;"
                                 "ALTER TABLE results ADD COLUMN feasibility_limiter TEXT;"
                                 "ALTER TABLE results ADD COLUMN feasibility_reason TEXT;"
                                 "ALTER TABLE results ADD COLUMN feasibility_flips TEXT;";

/* Version 18: what each proposal's verdict cost (store.h's
 * ppb_proposal_cost): its wall time by phase, its samples' kernel time and
 * what a fixed-sample design would have taken. NULL before. */
static const char schema_v18[] = "ALTER TABLE proposals ADD COLUMN wall_ms REAL;"
                                 "ALTER TABLE proposals ADD COLUMN setup_ms REAL;"
                                 "ALTER TABLE proposals ADD COLUMN inputs_ms REAL;"
                                 "ALTER TABLE proposals ADD COLUMN check_ms REAL;"
                                 "ALTER TABLE proposals ADD COLUMN warmup_ms REAL;"
                                 "ALTER TABLE proposals ADD COLUMN sampling_ms REAL;"
                                 "ALTER TABLE proposals ADD COLUMN kernel_ms REAL;"
                                 "ALTER TABLE proposals ADD COLUMN fixed_kernel_ms REAL;"
                                 "ALTER TABLE proposals ADD COLUMN fixed_samples INTEGER;";

/* Version 19: a comparison of two implementations' runs (`ppbench compare`
 * joining cases by shape) pools each case's noise over both implementations'
 * plain runs; how many were the baseline's (run_compare.h's history_split).
 * NULL or 0: one implementation. */
static const char schema_v19[] = "ALTER TABLE proposal_cases ADD COLUMN history_split INTEGER;";

/* Version 20: a proposal whose pair settled a REJECT alone cut the pairs after
 * it short (sampling.stop_when_settled; at first they stopped at their first
 * look, since 2026-12-07's second change they are checked and not timed, their
 * results stored as skipped): which pair (1-based; NULL or 0: none). */
static const char schema_v20[] = "ALTER TABLE proposals ADD COLUMN settled_by_pair INTEGER;";

/* Version 21: a comparison's two runs as a whole, log(run / its cases' usual
 * level): a baseline off beyond the noise widened every case, a candidate so
 * far moved is said in a note (rule 4); `verdict --recompute` has no histories
 * to measure them again. NULL: not measured (propose, or stored before). */
static const char schema_v21[] = "ALTER TABLE proposals ADD COLUMN baseline_shift REAL;"
                                 "ALTER TABLE proposals ADD COLUMN candidate_shift REAL;";

/* Version 22: a compared case whose baseline run lay off its usual level
 * beyond its noise: that offset, which widened the case (rule 5); `verdict
 * --recompute` has no histories to measure it again. NULL: not measured. */
static const char schema_v22[] = "ALTER TABLE proposal_cases ADD COLUMN baseline_offset REAL;";

const ppb_store_migration ppb_store_migrations[] = {
    {1, "runs, cases, results, samples, env", schema_v1},
    {2, "overrun and kernel resource columns", schema_v2},
    {3, "proposal verdicts", schema_v3},
    {4, "run uids and the push queue", schema_v4},
    {5, "the implementation column of cases", schema_v5},
    {6, "shards of one night folded into one run", schema_v6},
    {7, "the kind of each run", schema_v7},
    {8, "the time of each case's phases", schema_v8},
    {9, "the time spent storing results", schema_v9},
    {10, "the time spent opening the device", schema_v10},
    {11, "a checksum of each result row", schema_v11},
    {12, "the rules and the detectable effect of each proposal's verdict", schema_v12},
    {13, "what each verdict used: sample sessions and rounds, rules, design, looks, spreads", schema_v13},
    {14, "the decode steps of a mixed batch", schema_v14},
    {15, "the share of alpha each case's stopping look spent", schema_v15},
    {16, "the prefill kernels' num_stages", schema_v16},
    {17, "each result's judgement on the target profile", schema_v17},
    {18, "what each proposal's verdict cost", schema_v18},
    {19, "the split of a compared case's history between two implementations", schema_v19},
    {20, "the pair that settled a proposal's REJECT, after which sampling was cut short", schema_v20},
    {21, "a comparison's two runs as a whole against their history", schema_v21},
    {22, "a compared case's baseline off its usual level", schema_v22},
};

const int ppb_store_migration_count =
    (int)(sizeof ppb_store_migrations / sizeof ppb_store_migrations[0]);
