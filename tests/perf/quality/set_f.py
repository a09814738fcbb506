# ruff: noqa: E501  (scripted session data: long tool outputs read better unwrapped)
"""Set F: tuning sessions (per-fact results allowed) in five domains the other sets lack: a data
pipeline, a mobile app release, a database migration, a compiler miscompile and a model-serving
latency regression. Long tool outputs (config files, git logs, test configs) bury their values
among many settings of the same shape; turns read several files at once; values are restated
and corrected or superseded (the needle is the final value); people are named with their role in
several phrasings; decisions carry their reason in varied wording; constraints say "must not",
"never", "has to stay under". Written and committed before the offline summarizer was tuned on it.
"""

from __future__ import annotations

import random

from tests.perf.quality.script import (
    A,
    Call,
    Fact,
    Session,
    U,
    chatter,
    log,
    passing_tests,
    source,
)

_KEYS = [
    "retries", "pool_size", "max_workers", "buffer_kb", "flush_interval", "queue_depth",
    "shard_count", "prefetch", "page_size", "heartbeat_s", "grace_period", "log_level_num",
    "chunk_rows", "backoff_ms", "spill_mb", "ttl_days", "window_s", "parallelism",
]  # fmt: skip
_SUBJECTS = [
    "Fix typo in README", "Bump lint config", "Refactor helpers into utils", "Add missing test",
    "Update CI cache key", "Tidy imports", "Rename internal variable", "Improve error message",
    "Pin dev dependency", "Split long function", "Document env vars", "Drop unused fixture",
]  # fmt: skip
_AUTHORS = ["alex", "sam", "kim", "robin", "lee", "jo"]


def _settings(seed: int, count: int, planted: list[str], style: str = "yaml") -> str:
    """A config file of `count` numeric settings with the planted lines spread through it."""
    rng = random.Random(seed)
    sep = ": " if style == "yaml" else " = "
    lines = [f"{rng.choice(_KEYS)}_{i}{sep}{rng.randint(2, 900)}" for i in range(count)]
    for n, line in enumerate(planted):
        lines.insert((n + 1) * len(lines) // (len(planted) + 1), line)
    return "\n".join(lines)


def _git_log(seed: int, count: int, planted: list[str]) -> str:
    """`git log --oneline`-like lines with the planted commits in the middle."""
    rng = random.Random(seed)
    lines = [
        f"{rng.getrandbits(28):07x} {rng.choice(_SUBJECTS)} ({rng.choice(_AUTHORS)})"
        for _ in range(count)
    ]
    for n, line in enumerate(planted):
        lines.insert((n + 1) * len(lines) // (len(planted) + 1), line)
    return "\n".join(lines)


SESSIONS = [
    # -- a data pipeline dropping rows -------------------------------------------------------------
    Session(
        "f1-orders-pipeline",
        [
            U(
                "The nightly orders pipeline started dropping rows after Tuesday's deploy. Ines manages the data platform, so anything touching the warehouse schema goes through her."
            ),
            A(
                "Reading the DAG config, the loader and the recent history together.",
                Call(
                    "Read",
                    {"file_path": "/repo/pipelines/orders/dag.yaml"},
                    _settings(
                        601,
                        40,
                        [
                            "dedupe_window_minutes: 45",
                            "source_timezone: America/Sao_Paulo",
                            "target_table: analytics.orders_v3",
                        ],
                    ),
                ),
                Call(
                    "Read",
                    {"file_path": "/repo/pipelines/orders/loader.py"},
                    source(602, 30),
                ),
                Call(
                    "Bash",
                    {"command": "git log --oneline -n 40 -- pipelines/orders"},
                    _git_log(
                        603,
                        38,
                        [
                            "a41c9e2 Switch orders loader to merge-on-read (ines)",
                            "0be77d1 Add order_status enum values (sam)",
                        ],
                    ),
                ),
            ),
            A(
                chatter(61),
                Call(
                    "Bash",
                    {
                        "command": "python -m pipelines.audit --table analytics.orders_v3 --since 2024-06-04"
                    },
                    log(604, 60, "audit")
                    + "\nsource rows: 1,204,881\nloaded rows: 1,186,459\nmissing: 18,422 (1.53%)",
                ),
            ),
            A(
                "The audit shows 18,422 rows missing since June 4. The row loss comes from a41c9e2: merge-on-read collapses every row that shares an order_id inside the dedupe window, so late status updates overwrite each other."
            ),
            U(
                "Never backfill more than 7 days in one run, the warehouse bill spikes. And don't change the target table's schema without Ines."
            ),
            A(
                "We went with keying the dedupe on (order_id, updated_at) because late updates share an order_id but never an update time.",
                Call(
                    "Edit",
                    {
                        "file_path": "/repo/pipelines/orders/loader.py",
                        "old_string": "x",
                        "new_string": "y",
                    },
                    "The file /repo/pipelines/orders/loader.py has been updated.",
                ),
                Call(
                    "Edit",
                    {
                        "file_path": "/repo/pipelines/orders/tests/test_dedupe.py",
                        "old_string": "x",
                        "new_string": "y",
                    },
                    "The file /repo/pipelines/orders/tests/test_dedupe.py has been updated.",
                ),
            ),
            A(
                chatter(62),
                Call(
                    "Bash",
                    {"command": "pytest pipelines/orders -q"},
                    passing_tests(605, 80, "pipelines/orders/tests/test_dedupe.py"),
                ),
            ),
            U(
                "Backfill from June 3. Sorry, correction: from June 1, the first bad load was on the 1st."
            ),
            A(
                "Backfilling June 1 to June 7 first, within the 7-day limit.",
                Call(
                    "Bash",
                    {"command": "python -m pipelines.backfill orders --start 2024-06-01 --days 7"},
                    log(606, 50, "backfill")
                    + "\nbackfill done: 7 partitions, 18,422 rows restored",
                ),
            ),
            A(
                "Open: the second backfill run for June 8 onward, after Ines confirms the schema is unchanged."
            ),
        ],
        [
            Fact("person", ("Ines", "data platform"), "manages the data platform"),
            Fact("tool_output", ("dedupe_window", "45"), "setting buried in the DAG config"),
            Fact("tool_output", ("a41c9e2",), "the commit in a 40-line git log"),
            Fact("tool_output", ("18,422",), "rows missing per the audit"),
            Fact("conclusion", ("merge-on-read", "order_id"), "why rows were lost"),
            Fact("constraint", ("7 days",), "backfill limit"),
            Fact("constraint", ("schema", "Ines"), "schema changes go through Ines"),
            Fact("decision", ("updated_at", "late updates"), "dedupe key and why"),
            Fact("path", ("pipelines/orders/loader.py",), "edited"),
            Fact("path", ("test_dedupe.py",), "edited test"),
            Fact("number", ("June 1",), "corrected backfill start"),
            Fact("tool_output", ("orders_v3",), "target table from the config"),
        ],
    ),
    # -- an Android release ------------------------------------------------------------------------
    Session(
        "f2-android-release",
        [
            U(
                "We need to cut the 5.14 release of the Android app. Ask Renata, she owns the Play Console access. Jun (the release manager) signs off every rollout."
            ),
            A(
                "Reading the build file, the changelog and the commits since 5.13.",
                Call(
                    "Read",
                    {"file_path": "/app/android/app/build.gradle"},
                    _settings(
                        611,
                        35,
                        [
                            "versionCode = 51400",
                            'versionName = "5.14.0"',
                            "minSdk = 26",
                        ],
                        style="gradle",
                    ),
                ),
                Call(
                    "Bash",
                    {"command": "git log --oneline v5.13.0..HEAD"},
                    _git_log(
                        612,
                        45,
                        [
                            "9d03f4c Bump okhttp to 4.12.0 (robin)",
                            "51aa0c8 Promo codes apply before tax (kim)",
                        ],
                    ),
                ),
                Call(
                    "Read",
                    {"file_path": "/app/android/CHANGELOG.md"},
                    "\n".join(f"- {s} in 5.13.{i}" for i, s in enumerate(_SUBJECTS)),
                ),
            ),
            A(
                chatter(63),
                Call(
                    "Bash",
                    {"command": "./gradlew testReleaseUnitTest"},
                    passing_tests(613, 90, "app/src/test/CheckoutViewModelTest.kt")
                    + "\nCheckoutViewModelTest > applies promo code FAILED\n    org.junit.ComparisonFailure: expected:<1999> but was:<2099>\n91 tests completed, 1 failed",
                ),
            ),
            A(
                "The failure is in the test fixture, not the app: the promo fixture still assumes promo codes apply after tax, which 51aa0c8 changed, so the expected total is off by 100 cents."
            ),
            A(
                "Fixing the fixture and checking the bundle size.",
                Call(
                    "Edit",
                    {
                        "file_path": "/app/android/app/src/test/fixtures/PromoFixtures.kt",
                        "old_string": "x",
                        "new_string": "y",
                    },
                    "The file /app/android/app/src/test/fixtures/PromoFixtures.kt has been updated.",
                ),
                Call(
                    "Bash",
                    {
                        "command": "./gradlew bundleRelease && bundletool get-size total --apks=app.apks"
                    },
                    log(614, 40, "gradle") + "\nMIN,MAX\n36210114,40581332",
                ),
            ),
            A("Download size ranges from 36210114 to 40581332 bytes depending on the device."),
            U(
                "The download has to stay under 40 MB on every device, Play flags anything bigger in our low-end markets. Never ship with the debug menu enabled."
            ),
            A(
                "Decision: strip the unused ABI splits over shrinking assets, since the x86 libraries are 4.9 MB and no supported device uses them.",
                Call(
                    "Edit",
                    {
                        "file_path": "/app/android/app/build.gradle",
                        "old_string": "x",
                        "new_string": "y",
                    },
                    "The file /app/android/app/build.gradle has been updated.",
                ),
                Call(
                    "Bash",
                    {
                        "command": "./gradlew bundleRelease && bundletool get-size total --apks=app.apks"
                    },
                    log(615, 40, "gradle") + "\nMIN,MAX\n33901772,35452110",
                ),
            ),
            A("The largest download is now 35452110 bytes, under the limit."),
            U("Start the staged rollout at 10% on Thursday."),
            A("Staged rollout planned at 10% on Thursday."),
            U(
                "Jun says 10% is too much after last release's crash spike: make the first stage 2.5% and move it to Monday."
            ),
            A(
                "Updated the rollout plan: first stage 2.5%, Monday. Open: Renata uploads the bundle once Jun signs off."
            ),
        ],
        [
            Fact("person", ("Renata", "Play Console"), "ask Renata, she owns..."),
            Fact("person", ("Jun", "release manager"), "X (the release manager)"),
            Fact("tool_output", ("51400",), "versionCode in build.gradle"),
            Fact("tool_output", ("4.12.0",), "okhttp bump in git log"),
            Fact("tool_output", ("2099",), "the assertion's actual value"),
            Fact("conclusion", ("fixture", "after tax"), "why the test failed"),
            Fact("constraint", ("40 MB",), "download size limit"),
            Fact("constraint", ("debug menu",), "never ship it"),
            Fact("decision", ("ABI", "x86"), "what was cut and why"),
            Fact("path", ("PromoFixtures.kt",), "edited"),
            Fact("number", ("2.5%",), "corrected first stage"),
            Fact("number", ("Monday",), "superseded rollout day"),
        ],
    ),
    # -- a database migration ----------------------------------------------------------------------
    Session(
        "f3-billing-db-migration",
        [
            U(
                "We're migrating the billing database from the old VM to managed Postgres. Okafor runs the DBA rota; loop in Priyanka from finance, billing exports can't be late."
            ),
            A(
                "Reading the Terraform for the new instance and checking the old server.",
                Call(
                    "Read",
                    {"file_path": "/infra/terraform/billing/main.tf"},
                    _settings(
                        621,
                        45,
                        [
                            'instance_class = "db.r6g.xlarge"',
                            "backup_retention_period = 14",
                            'engine_version = "15.4"',
                        ],
                        style="tf",
                    ),
                ),
                Call(
                    "Bash",
                    {
                        "command": "psql -h billing-vm -c 'show max_connections' -c 'select version()' -c 'select pg_size_pretty(pg_database_size(current_database()))'"
                    },
                    " max_connections\n-----------------\n 400\n(1 row)\n\n version\n------------------------------------------------------------\n PostgreSQL 12.17 on x86_64-pc-linux-gnu, compiled by gcc 9.4.0, 64-bit\n(1 row)\n\n pg_size_pretty\n----------------\n 212 GB\n(1 row)",
                ),
            ),
            A("The old server runs PostgreSQL 12.17 with 400 connections and holds 212 GB."),
            U(
                "The cutover window must not exceed 30 minutes, billing runs at 02:00 UTC every night."
            ),
            A(
                "decided: logical replication with pglogical, not dump and restore; reason: restoring 212 GB takes about three hours, far beyond the cutover window.",
                Call(
                    "Write",
                    {"file_path": "/infra/scripts/cutover.sh", "content": "#!/bin/sh\n..."},
                    "File created successfully at: /infra/scripts/cutover.sh",
                ),
                Call(
                    "Edit",
                    {
                        "file_path": "/infra/terraform/billing/main.tf",
                        "old_string": "x",
                        "new_string": "y",
                    },
                    "The file /infra/terraform/billing/main.tf has been updated.",
                ),
            ),
            A(
                chatter(64),
                Call(
                    "Bash",
                    {
                        "command": "psql -h billing-new -c 'select * from pglogical.show_subscription_status()'"
                    },
                    log(622, 70, "pglogical")
                    + "\n sub_billing | replicating | lag 41 s | last_vacuum invoices_archive",
                ),
                Call(
                    "Bash",
                    {"command": "journalctl -u postgresql --since '02:00' | grep -i vacuum"},
                    log(623, 30, "postgres")
                    + "\n2024-06-11T02:14:07Z LOG automatic VACUUM FULL of table invoices_archive: 9 min",
                ),
            ),
            A(
                "So the replication lag spike came from the nightly VACUUM FULL on invoices_archive, not from the network."
            ),
            U(
                "Set max_connections on the new instance to 400 like the old one. Actually make it 650, Okafor is raising the pgbouncer pools."
            ),
            A(
                "Set max_connections = 650 in the parameter group.",
                Call(
                    "Bash",
                    {"command": "terraform -chdir=infra/terraform/billing plan"},
                    "\n".join(
                        f"  # aws_db_parameter.p{i} will be updated in-place" for i in range(30)
                    )
                    + "\nPlan: 0 to add, 3 to change, 0 to destroy.",
                ),
            ),
            A(
                "Open: schedule the cutover rehearsal with Okafor; Priyanka needs a day's notice before the real one."
            ),
        ],
        [
            Fact("person", ("Okafor", "DBA"), "runs the DBA rota"),
            Fact("person", ("Priyanka", "finance"), "loop in X from finance"),
            Fact("tool_output", ("db.r6g.xlarge",), "instance class in main.tf"),
            Fact("tool_output", ("backup_retention_period", "14"), "buried tf setting"),
            Fact("tool_output", ("12.17",), "old server version"),
            Fact("tool_output", ("212 GB",), "database size"),
            Fact("constraint", ("30 minutes",), "cutover window"),
            Fact("decision", ("pglogical", "restor"), "replication and why"),
            Fact("conclusion", ("VACUUM FULL", "invoices_archive"), "lag cause"),
            Fact("number", ("650",), "corrected max_connections"),
            Fact("path", ("scripts/cutover.sh",), "written"),
            Fact("tool_output", ("41 s",), "replication lag"),
        ],
    ),
    # -- a compiler miscompile ---------------------------------------------------------------------
    Session(
        "f4-dsl-miscompile",
        [
            U(
                "Our DSL compiler miscompiles nested loops at -O2 since the last upgrade. Halvard maintains the optimizer passes; Mei-Lin is the QA lead who wrote the fuzzing harness."
            ),
            A(
                "Reading the manifest, the fuzz config and the pass history.",
                Call(
                    "Read",
                    {"file_path": "/src/dslc/Cargo.toml"},
                    '[package]\nname = "dslc"\nversion = "0.8.3"\nedition = "2021"\n\n[dependencies]\n'
                    + "\n".join(f'crate_{i} = "{i % 4}.{i}.0"' for i in range(25))
                    + '\ninkwell = { version = "0.4.0", features = ["llvm17-0"] }\n'
                    + "\n".join(f'util_{i} = "1.{i}"' for i in range(15)),
                ),
                Call(
                    "Read",
                    {"file_path": "/src/dslc/tests/fuzz.toml"},
                    _settings(
                        631,
                        30,
                        ["timeout_secs = 75", "seed = 1337", "max_iterations = 200000"],
                        style="toml",
                    ),
                ),
                Call(
                    "Bash",
                    {"command": "git log --oneline -n 50 -- src/opt"},
                    _git_log(
                        632,
                        48,
                        [
                            "e7d21f0 licm: hoist loads out of inner loops when the alias set is empty (halvard)"
                        ],
                    ),
                ),
            ),
            A(
                chatter(65),
                Call(
                    "Bash",
                    {"command": "cargo test --release regress::"},
                    passing_tests(633, 70, "tests/regress.rs")
                    + "\n---- regress::nested_loop_sum stdout ----\nthread 'regress::nested_loop_sum' panicked at tests/regress.rs:88: assertion failed: expected 4950, got 4851\ntest result: FAILED. 70 passed; 1 failed",
                ),
            ),
            A(
                "The root cause is e7d21f0: LICM hoists a load across a store to the same array, because the alias check ignores the loop-carried index."
            ),
            U(
                "Don't touch the register allocator, it's frozen for the 0.9 release. Compile time of the std corpus has to stay under 2 s."
            ),
            A(
                "A dependence check over disabling LICM at -O2, since disabling it costs 18% on the benchmark suite.",
                Call(
                    "Edit",
                    {
                        "file_path": "/src/dslc/src/opt/licm.rs",
                        "old_string": "x",
                        "new_string": "y",
                    },
                    "The file /src/dslc/src/opt/licm.rs has been updated.",
                ),
                Call(
                    "Write",
                    {"file_path": "/src/dslc/tests/regress/nested_loops.dsl", "content": "..."},
                    "File created successfully at: /src/dslc/tests/regress/nested_loops.dsl",
                ),
            ),
            A(
                chatter(66),
                Call(
                    "Bash",
                    {"command": "cargo test --release && ./bench/compile_time.sh std"},
                    passing_tests(634, 72, "tests/regress.rs")
                    + "\ntest result: ok. 72 passed; 0 failed\n"
                    + log(635, 20, "bench")
                    + "\nstd corpus: 1.74 s (baseline 1.69 s)",
                ),
            ),
            A("All 72 tests pass and the std corpus compiles in 1.74 s."),
            A(
                "Open: Mei-Lin reruns the fuzzer for 200000 iterations before Halvard reviews the patch."
            ),
        ],
        [
            Fact("person", ("Halvard", "optimizer"), "maintains the passes"),
            Fact("person", ("Mei-Lin", "QA"), "X is the QA lead"),
            Fact("tool_output", ("llvm17",), "LLVM feature in Cargo.toml"),
            Fact("tool_output", ("timeout_secs", "75"), "buried fuzz setting"),
            Fact("tool_output", ("4851",), "the wrong result"),
            Fact("conclusion", ("LICM", "alias"), "root cause"),
            Fact("tool_output", ("e7d21f0",), "the culprit commit from git log"),
            Fact("constraint", ("register allocator",), "frozen"),
            Fact("constraint", ("under 2 s",), "compile time limit"),
            Fact("decision", ("dependence check", "18%"), "over disabling, since"),
            Fact("path", ("opt/licm.rs",), "edited"),
            Fact("number", ("1.74 s",), "compile time after the fix"),
        ],
    ),
    # -- model-serving latency ---------------------------------------------------------------------
    Session(
        "f5-recsys-latency",
        [
            U(
                "p99 latency on the recommender endpoint doubled since Monday. Sofia is the on-call SRE this week, and Dmitri owns the feature store."
            ),
            A(
                "Reading the serving config and the feature store client settings.",
                Call(
                    "Read",
                    {"file_path": "/srv/recsys/serving/config.yaml"},
                    _settings(
                        641,
                        40,
                        [
                            "model_version: recsys-2024.06.3",
                            "batch_timeout_ms: 12",
                            "feature_cache_ttl_s: 30",
                        ],
                    ),
                ),
                Call(
                    "Bash",
                    {"command": "git log --oneline -n 30 serving/config.yaml"},
                    _git_log(
                        642, 28, ["c3f90aa Lower feature cache TTL from 300 s to 30 s (dmitri)"]
                    ),
                ),
            ),
            A(
                chatter(67),
                Call(
                    "Bash",
                    {"command": "kubectl logs deploy/recsys-serving --since=1h | tail -n 200"},
                    log(643, 120, "recsys-serving")
                    + "\n2024-06-12T09:41:10Z WARN recsys-serving feature_store: cache miss ratio 0.37 over 60s\n"
                    + log(644, 60, "recsys-serving"),
                ),
            ),
            A(
                "That means the p99 jump comes from feature-store cache misses after the TTL change in c3f90aa, not from the model itself."
            ),
            U(
                "p99 has to stay under 80 ms, that's the SLO. Never restart the feature store pods during business hours."
            ),
            A(
                "We went with a two-tier cache, an in-process LRU in front of Redis, because most requests hit the same few thousand items.",
                Call(
                    "Edit",
                    {
                        "file_path": "/srv/recsys/serving/cache.py",
                        "old_string": "x",
                        "new_string": "y",
                    },
                    "The file /srv/recsys/serving/cache.py has been updated.",
                ),
                Call(
                    "Edit",
                    {
                        "file_path": "/srv/recsys/serving/config.yaml",
                        "old_string": "x",
                        "new_string": "y",
                    },
                    "The file /srv/recsys/serving/config.yaml has been updated.",
                ),
            ),
            U("Set the TTL back to 300 seconds."),
            A("TTL set to 300 seconds."),
            U("Dmitri says 300 is too stale for prices; use 120 seconds instead."),
            A(
                "TTL is now 120 seconds.",
                Call(
                    "Bash",
                    {"command": "python loadtest.py --rps 400 --duration 120"},
                    log(645, 50, "loadtest") + "\np50 9 ms  p95 33 ms  p99 61 ms  errors 0",
                ),
            ),
            A("Under 400 rps the p99 is 61 ms, inside the SLO."),
            U(
                "Canary at 14:00 today. Actually Sofia wants it after the traffic peak, make it 16:30."
            ),
            A("Open: canary at 16:30 with Sofia watching the dashboards."),
        ],
        [
            Fact("person", ("Sofia", "on-call"), "on-call SRE"),
            Fact("person", ("Dmitri", "feature store"), "owns the feature store"),
            Fact("tool_output", ("recsys-2024.06.3",), "model version in config"),
            Fact("tool_output", ("0.37",), "cache miss ratio buried in a log"),
            Fact("tool_output", ("c3f90aa",), "the TTL commit"),
            Fact("conclusion", ("cache miss", "TTL"), "why p99 rose"),
            Fact("constraint", ("80 ms",), "SLO"),
            Fact("constraint", ("business hours",), "never restart pods"),
            Fact("decision", ("LRU", "Redis"), "two-tier cache and why"),
            Fact("number", ("120 s",), "corrected TTL"),
            Fact("number", ("61 ms",), "measured p99"),
            Fact("number", ("16:30",), "superseded canary time"),
        ],
    ),
]
