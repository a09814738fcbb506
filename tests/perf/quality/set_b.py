# ruff: noqa: E501  (scripted session data: long tool outputs read better unwrapped)
"""Set B: the held-out sessions. Written and committed before the offline summarizer was tuned;
while tuning only its total was read, never which of its facts were lost."""

from __future__ import annotations

from tests.perf.quality.script import (
    A,
    Call,
    Fact,
    Session,
    U,
    chatter,
    listing,
    log,
    passing_tests,
    source,
)

SESSIONS = [
    Session(
        "b1-redis-cache",
        [
            U("Add caching to the product lookup. We have Redis in the stack already."),
            A(
                "Which Redis are we running?",
                Call(
                    "bash",
                    {"cmd": "redis-cli INFO server | grep redis_version"},
                    "redis_version:7.2.4",
                ),
            ),
            A(
                "Reading the service config.",
                Call(
                    "read_file",
                    {"path": "deploy/compose.yaml"},
                    'services:\n  redis:\n    image: redis:7.2\n    ports:\n      - "6380:6379"\n  web:\n    build: .\n'
                    + source(71, 6),
                ),
            ),
            A("Redis is exposed on host port 6380 in deploy/compose.yaml."),
            U(
                "whatever you do, never touch the session store keys, they live in the same redis db"
            ),
            A(
                "Went with a separate key prefix `prod:v1:` because it keeps our entries apart from the session keys and lets us flush only ours.",
                Call(
                    "edit_file", {"path": "shop/catalog/lookup.py"}, "edited shop/catalog/lookup.py"
                ),
            ),
            A(
                chatter(7),
                Call(
                    "bash",
                    {"cmd": "pytest tests/catalog -q"},
                    passing_tests(72, 45, "tests/catalog/test_lookup.py"),
                ),
            ),
            A(
                "Hit rate check.",
                Call(
                    "bash",
                    {"cmd": "python scripts/replay_traffic.py --minutes 5"},
                    log(73, 30, "web") + "\ncache hits 8812 misses 1190 hit_rate 0.881",
                ),
            ),
            A("Over five minutes of replayed traffic the hit rate is 0.881."),
            U("ttl?"),
            A("I set a TTL of 900 seconds on each entry."),
            U("ok. invalidation on price change is still missing right?"),
            A("Yes, still open: invalidate the entry when a price update event arrives."),
        ],
        [
            Fact("tool_output", ("7.2.4",), "redis version"),
            Fact("number", ("6380",), "host port from compose"),
            Fact("constraint", ("session store",), "never touch session keys"),
            Fact("decision", ("prod:v1:", "session keys"), "prefix and why"),
            Fact("path", ("shop/catalog/lookup.py",), "file changed"),
            Fact("tool_output", ("0.881",), "hit rate"),
            Fact("number", ("900",), "ttl"),
            Fact("decision", ("invalidat",), "open task: invalidation"),
        ],
    ),
    Session(
        "b2-typescript",
        [
            U("Type errors in the frontend build since yesterday. Sort it out."),
            A(
                "Compiler version first.",
                Call("bash", {"cmd": "npx tsc --version"}, "Version 5.4.5"),
            ),
            A(
                "Building.",
                Call(
                    "bash",
                    {"cmd": "npx tsc --noEmit"},
                    "src/components/Cart.tsx(42,17): error TS2322: Type 'string | undefined' is not assignable to type 'string'.\n"
                    + listing(81, 20, "src/components"),
                ),
            ),
            A("One error, TS2322 in src/components/Cart.tsx line 42."),
            U("pls no `any` casts and no ts-ignore. fix the types properly"),
            A(
                "Decision: narrow the value with a guard and fall back to an empty label, since the API can legitimately omit the coupon name.",
                Call(
                    "edit_file",
                    {"path": "src/components/Cart.tsx"},
                    "edited src/components/Cart.tsx",
                ),
            ),
            A(
                chatter(8),
                Call(
                    "bash",
                    {"cmd": "npx tsc --noEmit && npm test -- --silent"},
                    "Tests: 212 passed, 212 total\nSnapshots: 31 passed, 31 total",
                ),
            ),
            A("The build is clean and 212 tests pass."),
            U("How big is the bundle now?"),
            A(
                "Measuring.",
                Call(
                    "bash",
                    {"cmd": "npm run build"},
                    log(82, 20, "vite")
                    + "\ndist/assets/index-4b1c.js   389.21 kB │ gzip: 121.07 kB",
                ),
            ),
            A("389.21 kB, 121.07 kB gzipped."),
            U("The budget is 400 kB, so we're fine. Next up is the checkout page."),
        ],
        [
            Fact("tool_output", ("5.4.5",), "tsc version"),
            Fact("tool_output", ("TS2322",), "error code"),
            Fact("constraint", ("any", "ts-ignore"), "no any casts / ts-ignore"),
            Fact("decision", ("guard", "omit"), "narrow with guard, why"),
            Fact("path", ("src/components/Cart.tsx",), "file changed"),
            Fact("number", ("212",), "test count"),
            Fact("number", ("389.21",), "bundle size"),
            Fact("constraint", ("400 kB",), "bundle budget"),
        ],
    ),
    Session(
        "b3-cron",
        [
            U("The nightly export job didn't run last night. Find out why."),
            A(
                "Checking the job log.",
                Call(
                    "bash",
                    {"cmd": "journalctl -u export.service --since yesterday"},
                    log(91, 30, "export")
                    + "\nexport.service: Main process exited, code=exited, status=137/n/a\nexport.service: Failed with result 'oom-kill'.",
                ),
            ),
            A("The job was OOM-killed (status 137)."),
            A(
                "Memory limit:",
                Call(
                    "bash",
                    {"cmd": "systemctl show export.service -p MemoryMax"},
                    "MemoryMax=536870912",
                ),
            ),
            A("MemoryMax is 536870912 bytes (512 MiB)."),
            U("we can't raise the memory limit, the box is shared with the billing service"),
            A(
                "Then we'll use streaming writes in the exporter, because it currently builds the whole CSV in memory before writing.",
                Call(
                    "edit_file", {"path": "jobs/export/writer.py"}, "edited jobs/export/writer.py"
                ),
            ),
            A(
                chatter(9),
                Call(
                    "bash",
                    {"cmd": "/usr/bin/time -v python -m jobs.export --dry-run"},
                    "rows written: 2301554\nMaximum resident set size (kbytes): 88412",
                ),
            ),
            A("A dry run wrote 2301554 rows with a peak of about 88 MB."),
            U("do not restart the service during business hours. I'll do it tonight."),
            A(
                "Understood. I have not restarted it. Left to do: add a memory regression test under tests/jobs/."
            ),
        ],
        [
            Fact("tool_output", ("oom",), "oom kill"),
            Fact("number", ("137",), "exit status"),
            Fact("tool_output", ("536870912",), "MemoryMax value"),
            Fact("constraint", ("memory limit",), "cannot raise limit"),
            Fact("decision", ("stream", "whole CSV"), "streaming, why"),
            Fact("path", ("jobs/export/writer.py",), "file changed"),
            Fact("number", ("2301554",), "rows written"),
            Fact("constraint", ("business hours",), "no restart"),
        ],
    ),
    Session(
        "b4-auth-bug",
        [
            U("Users get logged out after exactly one hour even with remember-me. Investigate."),
            A(
                "Looking at the token settings.",
                Call(
                    "bash",
                    {"cmd": "grep -rn EXPIRE identity/"},
                    "identity/settings.py:22:ACCESS_TOKEN_EXPIRE_MINUTES = 60\nidentity/settings.py:23:REFRESH_TOKEN_EXPIRE_DAYS = 30",
                ),
            ),
            A(
                "Access tokens last 60 minutes, refresh tokens 30 days.",
                Call("read_file", {"path": "identity/refresh.py"}, source(101, 30)),
            ),
            A(
                "The refresh endpoint rejects tokens whose `aud` claim is the mobile app, so web clients with remember-me still fail to refresh."
            ),
            A(
                "Reproducing.",
                Call(
                    "bash",
                    {"cmd": "pytest tests/identity/test_refresh.py -q"},
                    passing_tests(102, 20, "tests/identity/test_refresh.py")
                    + "\nFAILED tests/identity/test_refresh.py::test_remember_me_refresh - jwt.InvalidAudienceError: Invalid audience",
                ),
            ),
            U(
                "Keep backwards compatibility with mobile clients on 3.x. Don't change the token format."
            ),
            A(
                "I'm going with accepting both audiences in the refresh check; reason: old mobile clients send the mobile audience and we must not break them.",
                Call("edit_file", {"path": "identity/refresh.py"}, "edited identity/refresh.py"),
            ),
            A(
                chatter(10),
                Call(
                    "bash",
                    {"cmd": "pytest tests/identity -q"},
                    passing_tests(103, 30, "tests/identity/test_refresh.py"),
                ),
            ),
            A("All identity tests pass."),
            U("Nice, thanks. ship it tomorrow, not today; we're in a freeze until 18:00."),
        ],
        [
            Fact("number", ("60",), "access token minutes"),
            Fact("tool_output", ("InvalidAudienceError",), "error"),
            Fact("constraint", ("token format",), "no format change"),
            Fact("decision", ("both audiences", "mobile"), "decision and reason"),
            Fact("path", ("identity/refresh.py",), "file changed"),
            Fact("constraint", ("freeze",), "freeze"),
            Fact("number", ("30 days",), "refresh token lifetime"),
        ],
    ),
    Session(
        "b5-data-pipeline",
        [
            U("The daily sales aggregate is off by a lot. Compare it with the raw table."),
            A(
                "Raw total:",
                Call(
                    "sql",
                    {"query": "select sum(amount) from raw_sales where day = '2024-05-03'"},
                    "sum\n-----------\n1048213.55",
                ),
            ),
            A(
                "Aggregate:",
                Call(
                    "sql",
                    {"query": "select total from daily_sales where day = '2024-05-03'"},
                    "total\n-----------\n2096427.10",
                ),
            ),
            A("The aggregate is exactly twice the raw sum, so rows are double counted."),
            A(
                "Reading the job.",
                Call(
                    "read_file",
                    {"path": "pipelines/sales/aggregate.sql"},
                    "insert into daily_sales\nselect day, sum(amount)\nfrom raw_sales r join stores s on s.region = r.region\ngroup by day;\n",
                ),
            ),
            A("The join on region matches two stores per region."),
            U("don't modify raw_sales, it's the source of truth for finance"),
            A(
                "We'll join on store_id instead of region: each sale has exactly one store_id, so it cannot fan out.",
                Call(
                    "edit_file",
                    {"path": "pipelines/sales/aggregate.sql"},
                    "edited pipelines/sales/aggregate.sql",
                ),
            ),
            A(
                "Re-running for the day.",
                Call(
                    "bash",
                    {"cmd": "dbt run --select daily_sales --vars '{day: 2024-05-03}'"},
                    log(111, 25, "dbt")
                    + "\nCompleted successfully\nDone. PASS=1 WARN=0 ERROR=0 SKIP=0 TOTAL=1",
                ),
            ),
            A("dbt run passed; the aggregate now equals the raw total."),
            U("Backfill the last 90 days too, but after I confirm with finance."),
            A("OK. The 90-day backfill is pending your confirmation."),
        ],
        [
            Fact("tool_output", ("1048213.55",), "raw sum"),
            Fact("number", ("2096427.10",), "aggregate"),
            Fact("constraint", ("raw_sales", "source of truth"), "do not modify raw_sales"),
            Fact("decision", ("store_id", "fan out"), "join key, why"),
            Fact("path", ("pipelines/sales/aggregate.sql",), "file changed"),
            Fact("tool_output", ("dbt run",), "command that worked"),
            Fact("number", ("90", "backfill"), "backfill days, pending"),
        ],
    ),
    Session(
        "b6-logging",
        [
            U("Switch the worker's logging to JSON so the log shipper can parse it."),
            A(
                "What logging setup is there?",
                Call("read_file", {"path": "worker/logconf.py"}, source(121, 20)),
            ),
            A(
                "Stock logging.basicConfig. Installed libraries:",
                Call(
                    "bash",
                    {"cmd": "pip freeze | grep -i log"},
                    "structlog==24.1.0\npython-json-logger==2.0.7",
                ),
            ),
            A("structlog 24.1.0 is already installed."),
            U("Prefer whatever's already installed. No new packages in requirements."),
            A(
                "We'll use structlog with its JSONRenderer, because it is already a dependency and the web service logs the same way.",
                Call("edit_file", {"path": "worker/logconf.py"}, "edited worker/logconf.py"),
            ),
            A(
                chatter(11),
                Call(
                    "bash",
                    {"cmd": "python -m worker --once 2>&1 | head -2"},
                    '{"event": "job started", "level": "info", "job_id": 7731}\n{"event": "job done", "level": "info", "job_id": 7731}',
                ),
            ),
            A("Lines are JSON now."),
            A(
                "Shipper config:",
                Call(
                    "read_file",
                    {"path": "ops/vector.toml"},
                    '[sources.worker]\ntype = "file"\ninclude = ["/var/log/worker/*.log"]\n[transforms.parse]\ntype = "remap"\n',
                ),
            ),
            A("The shipper reads /var/log/worker/*.log."),
            U(
                "Good. The shipper's parse transform still expects plain text though, I'll handle that one."
            ),
        ],
        [
            Fact("tool_output", ("24.1.0",), "structlog version"),
            Fact("constraint", ("no new packages",), "no new packages"),
            Fact("decision", ("structlog", "already"), "structlog, why"),
            Fact("path", ("worker/logconf.py",), "file changed"),
            Fact("path", ("/var/log/worker",), "log path"),
            Fact("number", ("7731",), "job id printed"),
        ],
    ),
]
