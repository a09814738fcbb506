# ruff: noqa: E501  (scripted session data: long tool outputs read better unwrapped)
"""Set H: tuning sessions (per-fact results allowed), written without reading the summarizer.

Five domains no other set uses: a Postgres bloat incident, a React Native build break, a CDN
cache-purge bug, a cron job that runs twice and a Go memory leak. Each session is long (tens of
thousands of tokens): outputs of 50-300 lines (configs, logs, git logs, test runs, stack traces,
profiles) with the planted value among many values shaped like it, several files per turn,
Claude Code shapes (Bash, Read, Edit, MultiEdit, Write, Grep) and Codex shapes (shell argv with
both output envelopes, apply_patch). Values are restated and corrected (the correction is the
fact) or superseded (the later one is the fact); reasons, limits, people and conclusions are
worded differently in each session, and some numbers are only ever said in conversation.
"""

from __future__ import annotations

import json
import random

from tests.perf.quality.script import A, Call, Fact, Session, U, chatter

# -- shared shapes -----------------------------------------------------------------------------


def _bury(lines: list[str], planted: dict[float, str]) -> str:
    """The lines, with each planted text at its fraction of the way through."""
    out = list(lines)
    for where, text in sorted(planted.items(), reverse=True):
        out.insert(int(len(lines) * where), text)
    return "\n".join(out)


def _hex(rng: random.Random, n: int = 7) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _numbered(text: str, start: int = 1) -> str:
    return "\n".join(f"{i:6d}\t{line}" for i, line in enumerate(text.splitlines(), start))


def _edited(path: str, snippet: str, start: int) -> str:
    return (
        f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet "
        f"of the edited file:\n{_numbered(snippet, start)}"
    )


def _git_log(
    seed: int, count: int, authors: list[str], subjects: list[str], planted: dict[float, str]
) -> str:
    rng = random.Random(seed)
    lines = []
    for i in range(count):
        day = 30 - i * 29 // count
        subject = rng.choice(subjects).format(n=rng.randint(2, 3900))
        lines.append(f"{_hex(rng)} 2026-11-{day:02d} {rng.choice(authors):<18} {subject}")
    return _bury(lines, planted)


def _codex_json(output: str, code: int = 0, seconds: float = 2.1) -> str:
    return json.dumps(
        {"output": output, "metadata": {"exit_code": code, "duration_seconds": seconds}}
    )


def _codex_text(output: str, code: int = 0, seconds: float = 2.1) -> str:
    return f"Exit code: {code}\nWall time: {seconds} seconds\nOutput:\n{output}"


def _sh(command: str, workdir: str) -> dict[str, object]:
    return {"command": ["bash", "-lc", command], "workdir": workdir}


def _patch(path: str, old: str, new: str, context: str = "") -> dict[str, object]:
    body = f"*** Begin Patch\n*** Update File: {path}\n@@ {context}\n"
    body += "".join(f"-{line}\n" for line in old.splitlines())
    body += "".join(f"+{line}\n" for line in new.splitlines())
    return {"input": body + "*** End Patch"}


def _patched(*paths: str) -> str:
    return "Success. Updated the following files:\n" + "\n".join(f"M {p}" for p in paths)


def _pytest(seed: int, count: int, modules: list[str], planted: dict[float, str], tail: str) -> str:
    rng = random.Random(seed)
    words = ["parses", "skips", "retries", "renders", "locks", "sends", "encodes", "batches"]
    objs = ["empty", "unicode", "late", "duplicate", "expired", "large", "missing", "nested"]
    lines = [f"============================= test session starts ({count} items) =="]
    for i in range(count):
        lines.append(
            f"{rng.choice(modules)}::test_{rng.choice(words)}_{rng.choice(objs)}_{i} PASSED{' ' * 6}[{100 * (i + 1) // count:3d}%]"
        )
    return _bury(lines, planted) + "\n" + tail


# -- h1: Postgres bloat ------------------------------------------------------------------------

_PG_TABLES = [
    "orders",
    "order_items",
    "shipments",
    "shipment_events",
    "carriers",
    "parcels",
    "customers",
    "addresses",
    "labels",
    "returns",
    "tracking_pings",
    "invoices",
    "webhook_deliveries",
    "audit_log",
    "rate_quotes",
    "warehouses",
]


def _pg_stat_tables(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "   schemaname   |        relname          | n_live_tup  | n_dead_tup | last_autovacuum               | autovacuum_count",
        "----------------+-------------------------+-------------+------------+-------------------------------+------------------",
    ]
    rows = []
    for i in range(150):
        rel = f"{rng.choice(_PG_TABLES)}_p{2026_01 + i % 12}" if i > 15 else _PG_TABLES[i]
        live = rng.randint(10_000, 90_000_000)
        dead = rng.randint(0, live // 40 + 1)
        if rel == "shipment_events":
            live, dead = 903_114_286, 48_211_907
        when = f"2026-12-0{rng.randint(1, 7)} 0{rng.randint(0, 9)}:{rng.randint(10, 59)}:{rng.randint(10, 59)}.{rng.randint(100000, 999999)}+00"
        if rel == "shipment_events":
            when = "2026-11-19 04:12:55.410233+00"
        rows.append(
            f" {rng.choice(['public', 'public', 'logistics']):<14} | {rel:<23} | {live:>11} | {dead:>10} | {when:<29} | {rng.randint(0, 900):>16}"
        )
    rows.sort(key=lambda r: -int(r.split("|")[3]))
    return "\n".join([*lines, *rows, "(150 rows)"])


def _pg_activity(seed: int) -> str:
    rng = random.Random(seed)
    states = ["active", "idle", "idle", "idle", "idle in transaction"]
    apps = ["shipping-api", "label-worker", "tracking-ingest", "metabase", "pgbouncer", "psql"]
    lines = [
        "  pid   |  usename   | application_name | state               |          xact_start           | backend_xmin | query",
        "--------+------------+------------------+---------------------+-------------------------------+--------------+-----------------------------------",
    ]
    for _ in range(100):
        state = rng.choice(states)
        lines.append(
            f" {rng.randint(600000, 899999):<6} | {rng.choice(['shipping', 'reporting', 'etl', 'postgres']):<10} | {rng.choice(apps):<16} | {state:<19} | 2026-12-07 08:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}+00     | {rng.choice(['', str(rng.randint(880_000_000, 890_000_000))]):<12} | {rng.choice(['SELECT 1', 'COMMIT', 'SELECT * FROM shipments WHERE id = $1', 'UPDATE tracking_pings SET seen_at = now() WHERE id = $1', 'INSERT INTO shipment_events (...) VALUES (...)'])}"
        )
    lines.insert(
        71,
        " 771402 | reporting  | metabase         | idle in transaction | 2026-12-04 22:41:07+00        | 861203344    | SELECT count(*) FROM shipment_events WHERE carrier_id = 14",
    )
    return "\n".join([*lines, "(101 rows)"])


def _pg_conf(seed: int) -> str:
    rng = random.Random(seed)
    keys = [
        "work_mem",
        "maintenance_work_mem",
        "effective_cache_size",
        "random_page_cost",
        "max_wal_size",
        "min_wal_size",
        "checkpoint_timeout",
        "wal_buffers",
        "max_parallel_workers",
        "log_min_duration_statement",
        "statement_timeout",
        "lock_timeout",
        "track_io_timing",
        "jit",
        "default_statistics_target",
    ]
    lines = [
        "# managed by ansible role postgres-tuning; local edits are overwritten",
        "listen_addresses = '*'",
        "max_connections = 400",
        "shared_buffers = 32GB",
    ]
    for i in range(110):
        k = keys[i % len(keys)]
        lines.append(
            f"#{k}_{i // len(keys)} = {rng.choice(['on', 'off', f'{rng.randint(1, 512)}MB', str(rng.randint(1, 9000)), f'{rng.randint(1, 60)}s'])}"
        )
        if i == 55:
            lines += [
                "autovacuum = on",
                "autovacuum_max_workers = 3",
                "autovacuum_naptime = 1min",
                "autovacuum_vacuum_scale_factor = 0.2",
                "autovacuum_analyze_scale_factor = 0.1",
                "autovacuum_vacuum_cost_limit = 200",
                "autovacuum_vacuum_cost_delay = 2ms",
                "idle_in_transaction_session_timeout = 0",
            ]
    return "\n".join(lines)


def _pg_log(seed: int, count: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    lines = []
    for i in range(count):
        ts = f"2026-12-07 0{i * 9 // count}:{rng.randint(10, 59)}:{rng.randint(10, 59)}.{rng.randint(100, 999)} UTC"
        r = rng.random()
        pid = rng.randint(600000, 899999)
        rel = rng.choice(_PG_TABLES)
        if r < 0.35:
            lines.append(
                f'{ts} [{pid}] LOG:  automatic vacuum of table "shipping.public.{rel}": index scans: {rng.randint(0, 2)}\n\tpages: 0 removed, {rng.randint(1000, 9_000_000)} remain, {rng.randint(0, 90000)} scanned\n\ttuples: {rng.randint(0, 90000)} removed, {rng.randint(1000, 90_000_000)} remain, {rng.randint(0, 9000)} are dead but not yet removable, oldest xmin: {rng.randint(861_000_000, 889_000_000)}'
            )
        elif r < 0.6:
            lines.append(
                f"{ts} [{pid}] LOG:  duration: {rng.randint(1000, 48000)}.{rng.randint(100, 999)} ms  statement: SELECT * FROM {rel} WHERE updated_at > $1 ORDER BY id LIMIT 500"
            )
        elif r < 0.72:
            lines.append(
                f"{ts} [{pid}] ERROR:  canceling statement due to statement timeout\n{ts} [{pid}] STATEMENT:  SELECT carrier_id, count(*) FROM {rel} GROUP BY 1"
            )
        elif r < 0.8:
            lines.append(
                f'{ts} [{pid}] ERROR:  could not obtain lock on relation "{rel}"\n{ts} [{pid}] STATEMENT:  LOCK TABLE {rel} IN SHARE MODE NOWAIT'
            )
        elif r < 0.86:
            lines.append(
                f'{ts} [{pid}] ERROR:  duplicate key value violates unique constraint "{rel}_pkey"\n{ts} [{pid}] DETAIL:  Key (id)=({rng.randint(10**7, 10**8)}) already exists.'
            )
        else:
            lines.append(
                f"{ts} [{pid}] LOG:  checkpoint complete: wrote {rng.randint(1000, 90000)} buffers ({rng.randint(1, 30)}.{rng.randint(0, 9)}%); 0 WAL file(s) added, {rng.randint(0, 40)} removed, {rng.randint(0, 40)} recycled; write={rng.randint(10, 270)}.{rng.randint(100, 999)} s"
            )
    return _bury(lines, planted)


def _pg_slots(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "      slot_name        |  plugin  | slot_type | active | xmin | catalog_xmin | restart_lsn  | confirmed_flush_lsn | wal_status",
        "-----------------------+----------+-----------+--------+------+--------------+--------------+---------------------+-----------",
    ]
    names = [
        "replica_eu_west_1b",
        "replica_eu_west_1c",
        "wal_archiver",
        "debezium_shipping",
        "debezium_analytics",
        "fivetran_billing",
        "replica_dr_frankfurt",
        "logical_audit",
    ]
    for name in names:
        lsn = f"{rng.choice(['5C0', '5C1', '5BF'])}/{_hex(rng, 8).upper()}"
        active, cxmin, status = "t", str(rng.randint(889_000_000, 889_900_000)), "reserved"
        if name == "debezium_analytics":
            lsn, active, cxmin, status = "4F1/9B22D0C8", "f", "861203101", "extended"
        lines.append(
            f" {name:<21} | {'pgoutput' if 'replica' not in name else '':<8} | {'logical' if 'replica' not in name else 'physical':<9} | {active:<6} |      | {cxmin:<12} | {lsn:<12} | {lsn:<19} | {status}"
        )
    return "\n".join([*lines, f"({len(names)} rows)"])


_PG_AUTHORS = ["dmitri.volkov", "anika.s", "r.castillo", "jess.m", "svc-dependabot", "k.osei"]
_PG_SUBJECTS = [
    "Add index on shipment_events (carrier_id, created_at)",
    "Partition tracking_pings by month (#{n})",
    "Bump pgbouncer pool size for label-worker",
    "Drop unused column shipments.legacy_ref",
    "Add migration for returns.reason_code",
    "Raise statement_timeout for reporting role",
    "Merge pull request #{n} from logistics/carrier-cleanup",
    "Vacuum analyze after bulk import of rate_quotes",
    "Add Debezium connector config for analytics",
    "Grant read on shipment_events to reporting",
]

H1 = Session(
    "h1-pg-bloat",
    [
        U(
            "p99 on the shipping API went from 40ms to 900ms overnight and the primary's disk is at 87%. Dmitri Volkov is our DBA and owns the fleet, so anything that rewrites a table goes past him first. Can you dig in? Everything's in /srv/shipping-db."
        ),
        A(
            "Starting with table statistics and the Postgres settings that govern autovacuum.",
            Call(
                "Bash",
                {
                    "command": 'psql -h pg-primary-1 -U postgres -d shipping -c "SELECT schemaname, relname, n_live_tup, n_dead_tup, last_autovacuum, autovacuum_count FROM pg_stat_user_tables ORDER BY n_dead_tup DESC"',
                    "description": "Dead tuples per table",
                },
                _pg_stat_tables(2101),
            ),
            Call(
                "Read",
                {
                    "file_path": "/srv/shipping-db/ansible/roles/postgres-tuning/templates/postgresql.conf.j2"
                },
                _numbered(_pg_conf(2102)),
            ),
        ),
        A(
            "shipment_events has tens of millions of dead rows and hasn't been autovacuumed in weeks. Checking what's holding back the xmin horizon: sessions first, then replication slots.",
            Call(
                "Bash",
                {
                    "command": "psql -h pg-primary-1 -U postgres -d shipping -c \"SELECT pid, usename, application_name, state, xact_start, backend_xmin, left(query, 60) FROM pg_stat_activity WHERE datname = 'shipping' ORDER BY xact_start\"",
                    "description": "Open sessions and their xmin",
                },
                _pg_activity(2103),
            ),
            Call(
                "Bash",
                {
                    "command": "psql -h pg-primary-1 -U postgres -d shipping -c 'SELECT slot_name, plugin, slot_type, active, xmin, catalog_xmin, restart_lsn, confirmed_flush_lsn, wal_status FROM pg_replication_slots'",
                    "description": "Replication slots",
                },
                _pg_slots(2104),
            ),
        ),
        A(
            "Reading the last few hours of the server log for the autovacuum runs on that table.",
            Call(
                "Bash",
                {
                    "command": "ssh pg-primary-1 'sudo tail -n 400 /var/log/postgresql/postgresql-15-main.log'",
                    "description": "Postgres server log",
                },
                _pg_log(
                    2105,
                    95,
                    {
                        0.52: '2026-12-07 05:33:41.218 UTC [774310] LOG:  automatic vacuum of table "shipping.public.shipment_events": index scans: 0\n\tpages: 0 removed, 52733108 remain, 1803344 scanned (3.42% of total)\n\ttuples: 0 removed, 951326193 remain, 48211907 are dead but not yet removable, oldest xmin: 861203101\n\tremovable cutoff: 861203101, which was 28693125 XIDs old when operation ended',
                        0.53: "2026-12-07 05:33:41.219 UTC [774310] WARNING:  oldest xmin is far in the past\n2026-12-07 05:33:41.219 UTC [774310] HINT:  Close open transactions soon to avoid wraparound problems.\n\tYou might also need to commit or roll back old prepared transactions, or drop stale replication slots.",
                    },
                ),
            ),
            Call(
                "Grep",
                {
                    "pattern": "debezium|slot.name",
                    "path": "/srv/shipping-db",
                    "output_mode": "content",
                    "-n": True,
                },
                'connectors/debezium-shipping.json:7:    "slot.name": "debezium_shipping",\nconnectors/debezium-analytics.json:7:    "slot.name": "debezium_analytics",\nconnectors/debezium-analytics.json:8:    "publication.name": "analytics_pub",\nconnectors/README.md:12:Both connectors run in the kafka-connect cluster in namespace data-platform.\nconnectors/README.md:31:The analytics connector is owned by the analytics team.',
            ),
        ),
        A(
            "Two things pin the horizon at 861203101: the reporting session that has been idle in transaction since Friday night, and the inactive debezium_analytics logical slot, whose catalog_xmin is the oldest on the server. The slot is the bigger problem: its connector has been stopped, so nothing advances it, WAL is piling up behind its restart LSN and no vacuum on shipment_events can remove the 48 million dead rows. The idle Metabase session only holds a slightly newer xmin."
        ),
        U(
            "The slot belongs to Anika Sørensen's team, she leads analytics engineering. She says the connector was paused during their warehouse move and they can re-snapshot, so the slot can go. The idle session, kill it."
        ),
        A(
            "Terminating the idle session and dropping the stale slot.",
            Call(
                "Bash",
                {
                    "command": "psql -h pg-primary-1 -U postgres -d shipping -c 'SELECT pg_terminate_backend(771402)' -c \"SELECT pg_drop_replication_slot('debezium_analytics')\"",
                    "description": "Terminate session, drop slot",
                },
                " pg_terminate_backend\n----------------------\n t\n(1 row)\n\n pg_drop_replication_slot\n--------------------------\n \n(1 row)",
            ),
        ),
        U(
            "Before you do anything to the table itself: no VACUUM FULL on shipment_events, not even off-hours. It holds an ACCESS EXCLUSIVE lock for the whole rewrite and the label workers time out in 5 seconds."
        ),
        A(
            "Agreed. I'll go with pg_repack to reclaim the space rather than VACUUM FULL, since it rebuilds the table online and only needs a short exclusive lock at the swap at the end. First a plain VACUUM so the dead rows are at least reusable. The table is 412 GB on disk right now and I'd expect roughly 60% of that back.",
            Call(
                "Bash",
                {
                    "command": "psql -h pg-primary-1 -U postgres -d shipping -c 'VACUUM (VERBOSE, PARALLEL 4) shipment_events' 2>&1 | tail -n 80",
                    "description": "Plain vacuum",
                },
                _pg_log(
                    2106,
                    45,
                    {
                        0.9: 'INFO:  "shipment_events": found 48211907 removable, 903114286 nonremovable row versions in 52733108 out of 52733108 pages'
                    },
                ),
            ),
        ),
        U(
            "For the per-table autovacuum settings, use a scale factor of 0.05. Actually no, make it 0.01: at 900M rows even 5% is 45M dead tuples before it kicks in."
        ),
        A(
            "Writing a migration with per-table storage parameters for shipment_events and checking the migration folder's conventions.",
            Call(
                "Bash",
                {
                    "command": "ls -la /srv/shipping-db/migrations | tail -n 90",
                    "description": "Migration listing",
                },
                "\n".join(
                    f"-rw-r--r--  1 deploy deploy {random.Random(2107 + i).randint(300, 6000):5d} Nov {1 + i % 28:2d} {50 + i:04d}_{random.Random(i).choice(['add', 'drop', 'alter', 'index', 'backfill'])}_{random.Random(i * 7).choice(_PG_TABLES)}.sql"
                    for i in range(90)
                ),
            ),
            Call(
                "Write",
                {
                    "file_path": "/srv/shipping-db/migrations/0142_shipment_events_autovacuum.sql",
                    "content": "-- shipment_events is ~900M rows: trigger on 1% dead, and let the worker do more per round\nALTER TABLE shipment_events SET (\n  autovacuum_vacuum_scale_factor = 0.01,\n  autovacuum_analyze_scale_factor = 0.02,\n  autovacuum_vacuum_cost_limit = 2000\n);\n",
                },
                "File created successfully at: /srv/shipping-db/migrations/0142_shipment_events_autovacuum.sql",
            ),
        ),
        U(
            "Also set idle_in_transaction_session_timeout globally. Reporting jobs legitimately hold a transaction for a few minutes, so it has to be at least 10 minutes, never lower."
        ),
        A(
            "Adding it to the tuning role's conf.d file with a 15 minute value, above the 10 minute floor.",
            Call(
                "Read",
                {
                    "file_path": "/srv/shipping-db/ansible/roles/postgres-tuning/files/conf.d/autovacuum.conf"
                },
                _numbered(
                    "# autovacuum overrides for the shipping cluster\nautovacuum_max_workers = 3\nautovacuum_naptime = 1min\nautovacuum_vacuum_cost_limit = 200\n"
                ),
            ),
            Call(
                "Edit",
                {
                    "file_path": "/srv/shipping-db/ansible/roles/postgres-tuning/files/conf.d/autovacuum.conf",
                    "old_string": "autovacuum_max_workers = 3\nautovacuum_naptime = 1min\nautovacuum_vacuum_cost_limit = 200",
                    "new_string": "autovacuum_max_workers = 6\nautovacuum_naptime = 30s\nautovacuum_vacuum_cost_limit = 1200\nidle_in_transaction_session_timeout = '15min'",
                },
                _edited(
                    "/srv/shipping-db/ansible/roles/postgres-tuning/files/conf.d/autovacuum.conf",
                    "# autovacuum overrides for the shipping cluster\nautovacuum_max_workers = 6\nautovacuum_naptime = 30s\nautovacuum_vacuum_cost_limit = 1200\nidle_in_transaction_session_timeout = '15min'",
                    1,
                ),
            ),
            Call(
                "Bash",
                {
                    "command": "cd /srv/shipping-db && ansible-playbook -i inventories/prod site.yml --tags postgres-tuning --check --diff 2>&1 | tail -n 120",
                    "description": "Dry-run the tuning role",
                },
                "\n".join(
                    f"TASK [postgres-tuning : {t}] {'*' * 40}\nok: [pg-{h}]"
                    for t in [
                        "template postgresql.conf",
                        "copy conf.d",
                        "check config",
                        "reload if changed",
                    ]
                    for h in ["primary-1", "replica-1", "replica-2", "replica-3", "dr-1"]
                )
                + '\nTASK [postgres-tuning : copy conf.d] ****\nchanged: [pg-primary-1]\nfatal: [pg-dr-1]: UNREACHABLE! => {"changed": false, "msg": "Failed to connect to the host via ssh: ssh: connect to host pg-dr-1 port 22: Connection timed out", "unreachable": true}\n\nPLAY RECAP *****\npg-primary-1 : ok=14 changed=1 unreachable=0 failed=0\npg-replica-1 : ok=14 changed=0 unreachable=0 failed=0\npg-dr-1 : ok=3 changed=0 unreachable=1 failed=0',
            ),
        ),
        A(
            "Looking at the recent history of the repo before scheduling the repack.",
            Call(
                "Bash",
                {
                    "command": "git -C /srv/shipping-db log --since=2026-11-01 --format='%h %ad %an %s' --date=short | head -150",
                    "description": "Recent commits",
                },
                _git_log(
                    2108,
                    140,
                    _PG_AUTHORS,
                    _PG_SUBJECTS,
                    {
                        0.4: "9e41c7a 2026-11-18 anika.s            Pause debezium-analytics connector during warehouse migration"
                    },
                ),
            ),
        ),
        U(
            "Dmitri's OK with pg_repack. Run it Saturday at 02:00 UTC. Hmm, scratch that: Saturday has the carrier rate import. Sunday 03:00 UTC it is."
        ),
        A(
            "Scheduling the repack for Sunday 03:00 UTC and doing a dry run on the staging copy now.",
            Call(
                "Bash",
                {
                    "command": "pg_repack -h pg-staging-1 -U postgres -d shipping --table=public.shipment_events --jobs=4 --wait-timeout=60 --no-kill-backend --dry-run 2>&1 | tail -n 60",
                    "description": "pg_repack dry run on staging",
                },
                'INFO: Dry run enabled, not executing repack\nINFO: repacking table "public.shipment_events"\n'
                + "\n".join(
                    f'INFO: repacking index "public.shipment_events_{c}_idx"'
                    for c in [
                        "carrier_id_created_at",
                        "shipment_id",
                        "status",
                        "created_at",
                        "external_ref",
                        "pkey",
                    ]
                )
                + "\nWARNING: timed out, do not cancel conflicting backends\nINFO: Skipping repack public.shipment_events due to timeout\nERROR: query failed: ERROR:  canceling statement due to lock timeout\nDETAIL: query was: LOCK TABLE public.shipment_events IN ACCESS EXCLUSIVE MODE",
                True,
            ),
        ),
        A(
            "The dry run hit the lock timeout on staging because a long analytics query held the table; on Sunday at 03:00 there is no such load. Writing the cron entry."
        ),
        A(
            chatter(2109),
            Call(
                "Bash",
                {
                    "command": "psql -h pg-primary-1 -U postgres -d shipping -c \"SELECT pg_size_pretty(pg_total_relation_size('shipment_events')), pg_size_pretty(pg_relation_size('shipment_events'))\"",
                    "description": "Table size",
                },
                " pg_size_pretty | pg_size_pretty\n----------------+----------------\n 412 GB         | 301 GB\n(1 row)",
            ),
        ),
        A(
            "Summary so far: the xmin horizon was held by the stopped debezium_analytics slot (dropped, Anika's team re-snapshots) and a Metabase session idle in transaction (terminated). Dead rows are now removable, shipment_events gets scale factor 0.01 in migration 0142, idle_in_transaction_session_timeout is 15min in conf.d/autovacuum.conf, and pg_repack runs Sunday 03:00 UTC; no VACUUM FULL."
        ),
    ],
    [
        Fact("person", ("Dmitri", "DBA"), "who approves table rewrites"),
        Fact("person", ("Anika", "analytics"), "owner of the stale slot"),
        Fact("tool_output", ("48211907",), "dead tuples in shipment_events, mid-table"),
        Fact("tool_output", ("771402",), "pid idle in transaction, mid-activity"),
        Fact("tool_output", ("4F1/9B22D0C8",), "restart_lsn of the stale slot"),
        Fact("conclusion", ("debezium_analytics", "xmin"), "stale slot held the xmin horizon"),
        Fact("constraint", ("VACUUM FULL",), "never VACUUM FULL shipment_events"),
        Fact("decision", ("pg_repack", "lock"), "pg_repack and why"),
        Fact("number", ("0.01",), "scale factor, the corrected value"),
        Fact("path", ("0142_shipment_events_autovacuum",), "migration written"),
        Fact("path", ("conf.d/autovacuum.conf",), "conf edited"),
        Fact("constraint", ("idle_in_transaction_session_timeout", "10 minutes"), "timeout floor"),
        Fact("number", ("412 GB",), "table size"),
        Fact("number", ("Sunday 03:00",), "repack time, the later value"),
    ],
)


# -- h2: React Native build break --------------------------------------------------------------

_RN_DIR = "/home/dev/src/tandem-app"


def _gradle_log(seed: int, count: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    modules = [
        "react-native-screens",
        "react-native-reanimated",
        "react-native-gesture-handler",
        "react-native-ble-plx",
        "react-native-mmkv",
        "react-native-svg",
        "sentry_react-native",
        "react-native-safe-area-context",
        "app",
    ]
    tasks = [
        "preBuild",
        "generateDebugBuildConfig",
        "compileDebugKotlin",
        "compileDebugJavaWithJavac",
        "mergeDebugResources",
        "processDebugManifest",
        "bundleLibCompileToJarDebug",
        "configureCMakeDebug[arm64-v8a]",
        "buildCMakeDebug[arm64-v8a]",
    ]
    lines = [
        "Starting a Gradle Daemon (subsequent builds will be faster)",
        "> Configure project :app",
    ]
    for _ in range(count):
        r = rng.random()
        m = rng.choice(modules)
        if r < 0.7:
            lines.append(
                f"> Task :{m}:{rng.choice(tasks)}{rng.choice(['', ' UP-TO-DATE', ' NO-SOURCE', ' FROM-CACHE'])}"
            )
        elif r < 0.85:
            lines.append(
                f"w: file:///{_RN_DIR}/node_modules/{m}/android/src/main/java/com/{m.replace('-', '')}/{rng.choice(['Module', 'Package', 'ViewManager', 'Utils'])}.kt:{rng.randint(10, 400)}:{rng.randint(3, 60)} '{rng.choice(['getter for currentActivity', 'constructor ReactModuleInfo', 'onCatalystInstanceDestroy', 'setJSResponder'])}' is deprecated. Deprecated in Java"
            )
        else:
            lines.append(
                f"Note: {_RN_DIR}/node_modules/{m}/android/src/main/java/com/{m.replace('-', '')}/{rng.choice(['Module', 'Package'])}.java uses or overrides a deprecated API."
            )
    return _bury(lines, planted)


def _pod_install(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    pods = [
        "RCT-Folly",
        "React-Core",
        "React-RCTImage",
        "React-jsi",
        "ReactCommon",
        "RNScreens",
        "RNReanimated",
        "RNGestureHandler",
        "MultiplatformBleAdapter",
        "react-native-ble-plx",
        "RNSVG",
        "Sentry",
        "MMKV",
        "MMKVCore",
        "glog",
        "boost",
        "fmt",
        "SocketRocket",
        "Yoga",
        "DoubleConversion",
    ]
    lines = [
        "Auto-linking React Native modules for target `Tandem`: RNGestureHandler, RNReanimated, RNSVG, RNScreens, RNSentry, react-native-ble-plx, react-native-mmkv",
        "Analyzing dependencies",
        "Fetching podspec for `hermes-engine` from `../node_modules/react-native/sdks/hermes-engine/hermes-engine.podspec`",
    ]
    for _ in range(130):
        p = rng.choice(pods)
        lines.append(
            f"{rng.choice(['Installing', 'Using', 'Downloading dependencies', 'Generating'])} {p} ({rng.randint(0, 12)}.{rng.randint(0, 40)}.{rng.randint(0, 9)})"
        )
    return _bury(lines, planted)


_JEST_CONSOLE = [
    "console.error\n    Warning: An update to DeviceCard inside a test was not wrapped in act(...).",
    'console.error\n    Warning: Each child in a list should have a unique "key" prop. Check the render method of `WeeklyChart`.',
    "console.warn\n    [react-native-mmkv] MMKV is running in a mocked environment.",
    "console.error\n    Error: Uncaught [TypeError: Cannot read properties of undefined (reading 'battery')]",
    "console.warn\n    Sending `onAnimatedValueUpdate` with no listeners registered.",
    "console.error\n    BleError: Bluetooth is powered off\n        at BleManager._callPromise (node_modules/react-native-ble-plx/src/BleManager.js:1104:13)",
    "console.error\n    Warning: componentWillReceiveProps has been renamed, and is not recommended for use in strict mode.",
    "console.warn\n    i18next::translator: missingKey de translation settings.units.imperial",
]


def _jest(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    suites = [
        "src/screens/Home",
        "src/screens/Settings",
        "src/screens/Pairing",
        "src/ble/scanner",
        "src/ble/protocol",
        "src/store/devices",
        "src/store/session",
        "src/components/Chart",
        "src/components/Toast",
        "src/utils/units",
    ]
    lines = []
    for _ in range(95):
        s = rng.choice(suites)
        lines.append(
            f"PASS {s}/{rng.choice(['index', 'reducer', 'hooks', 'view', 'format'])}.test.tsx ({rng.randint(1, 9)}.{rng.randint(100, 999)} s)"
        )
        if rng.random() < 0.3:
            lines.append(f"  {rng.choice(_JEST_CONSOLE)}")
        for _ in range(rng.randint(1, 3)):
            lines.append(
                f"  ✓ {rng.choice(['renders', 'updates', 'persists', 'decodes', 'rejects', 'formats'])} {rng.choice(['empty state', 'battery level', 'firmware version', 'metric units', 'long names', 'stale packets'])} ({rng.randint(2, 240)} ms)"
            )
    return _bury(lines, planted)


def _rn_package_json() -> str:
    deps = {
        "@react-navigation/native": "^6.1.18",
        "@react-navigation/native-stack": "^6.11.0",
        "@sentry/react-native": "^5.35.0",
        "react": "18.3.1",
        "react-native": "0.76.3",
        "react-native-ble-plx": "2.0.3",
        "react-native-gesture-handler": "^2.21.2",
        "react-native-mmkv": "^2.12.2",
        "react-native-reanimated": "~3.16.3",
        "react-native-safe-area-context": "^4.14.0",
        "react-native-screens": "^3.35.0",
        "react-native-svg": "^15.8.0",
        "zustand": "^4.5.5",
        "date-fns": "^3.6.0",
        "i18next": "^23.16.4",
        "react-i18next": "^15.1.1",
    }
    dev = {
        f"@types/{n}": f"^{i}.{i * 3 % 10}.0"
        for i, n in enumerate(["jest", "react", "node", "lodash", "semver"], 1)
    }
    dev.update(
        {
            "jest": "^29.7.0",
            "typescript": "5.6.3",
            "@react-native/babel-preset": "0.76.3",
            "patch-package": "^8.0.0",
            "detox": "^20.28.0",
        }
    )
    return json.dumps(
        {
            "name": "tandem-app",
            "version": "5.9.0",
            "private": True,
            "scripts": {
                "android": "react-native run-android",
                "ios": "react-native run-ios",
                "test": "jest",
                "postinstall": "patch-package",
                "lint": "eslint .",
            },
            "dependencies": deps,
            "devDependencies": dev,
        },
        indent=2,
    )


def _app_gradle(seed: int) -> str:
    rng = random.Random(seed)
    head = 'apply plugin: "com.android.application"\napply plugin: "org.jetbrains.kotlin.android"\napply plugin: "com.facebook.react"\n\nreact {\n    autolinkLibrariesWithApp()\n    hermesEnabled = true\n}\n\nandroid {\n    ndkVersion rootProject.ext.ndkVersion\n    compileSdk rootProject.ext.compileSdkVersion\n    namespace "com.tandem.app"\n    defaultConfig {\n        applicationId "com.tandem.app"\n        minSdkVersion rootProject.ext.minSdkVersion\n        targetSdkVersion rootProject.ext.targetSdkVersion\n        versionCode 5090\n        versionName "5.9.0"\n    }\n'
    flavors = "\n".join(
        f'        {f} {{\n            dimension "env"\n            applicationIdSuffix ".{f}"\n            resValue "string", "api_host", "{f}.api.tandem.io"\n            buildConfigField "int", "BLE_SCAN_MS", "{rng.choice([4000, 6000, 8000, 10000])}"\n        }}'
        for f in ["dev", "qa", "beta", "prod", "perf", "demo"]
    )
    tail = '\n    }\n}\n\ndependencies {\n    implementation("com.facebook.react:react-android")\n    implementation("com.facebook.react:hermes-android")\n    implementation("androidx.swiperefreshlayout:swiperefreshlayout:1.1.0")\n    implementation project(":react-native-ble-plx")\n    debugImplementation("com.facebook.flipper:flipper:0.250.0")\n}\n'
    return head + '    flavorDimensions "env"\n    productFlavors {\n' + flavors + tail


_RN_AUTHORS = ["tomas.ferreira", "nia.b", "oskar.l", "mei.chen", "renovate[bot]", "p.adeyemi"]
_RN_SUBJECTS = [
    "chore(deps): update dependency @sentry/react-native to v5.{n}",
    "feat(pairing): show firmware version on the device card",
    "fix(ble): reconnect after background ({n})",
    "chore: bump react-native to 0.76.3",
    "refactor(store): split devices slice",
    "test: stabilise Toast snapshot",
    "Merge pull request #{n} from tandem/release/5.9",
    "ci: cache gradle wrapper",
    "fix(ios): status bar colour on Settings",
    "feat(chart): weekly view",
]

H2 = Session(
    "h2-rn-build",
    [
        U(
            f"Since the React Native 0.76 bump landed on main, the Android debug build fails and iOS pod install is broken too. Tomás Ferreira runs mobile releases and wants 5.9 cut Thursday. Repo is {_RN_DIR}."
        ),
        A(
            "Building Android first to get the actual error.",
            Call(
                "shell",
                _sh(
                    "cd android && ./gradlew :app:assembleDevDebug --console=plain 2>&1 | tail -n 260",
                    _RN_DIR,
                ),
                _codex_text(
                    _gradle_log(
                        2201,
                        230,
                        {
                            0.62: "> Task :app:checkDevDebugDuplicateClasses FAILED\n\nFAILURE: Build failed with an exception.\n\n* What went wrong:\nExecution failed for task ':app:checkDevDebugDuplicateClasses'.\n> A failure occurred while executing com.android.build.gradle.internal.tasks.CheckDuplicatesRunnable\n   > Duplicate class kotlin.collections.jdk8.CollectionsJDK8Kt found in modules kotlin-stdlib-1.9.24 (org.jetbrains.kotlin:kotlin-stdlib:1.9.24) and kotlin-stdlib-jdk8-1.7.10 (org.jetbrains.kotlin:kotlin-stdlib-jdk8:1.7.10)\n     Duplicate class kotlin.internal.jdk7.JDK7PlatformImplementations found in modules kotlin-stdlib-1.9.24 (org.jetbrains.kotlin:kotlin-stdlib:1.9.24) and kotlin-stdlib-jdk7-1.7.10 (org.jetbrains.kotlin:kotlin-stdlib-jdk7:1.7.10)\n\n     Go to the documentation to learn how to <a href=\"d.android.com/r/tools/classpath-sync-errors\">Fix dependency resolution errors</a>.",
                        },
                    )
                    + "\n\nBUILD FAILED in 3m 41s\n412 actionable tasks: 388 executed, 24 up-to-date",
                    1,
                    221.7,
                ),
            ),
            Call(
                "shell",
                _sh("cat package.json android/app/build.gradle", _RN_DIR),
                _codex_json(_rn_package_json() + "\n" + _app_gradle(2202)),
            ),
        ),
        A(
            "Finding which module drags in the old jdk8 stdlib.",
            Call(
                "shell",
                _sh(
                    "cd android && ./gradlew :app:dependencies --configuration devDebugRuntimeClasspath 2>&1 | grep -n -B2 -A2 'kotlin-stdlib' | head -200",
                    _RN_DIR,
                ),
                _codex_json(
                    "\n".join(
                        f"{400 + i * 3}-|    |    +--- {random.Random(2203 + i).choice(['androidx.core:core-ktx:1.13.1', 'androidx.lifecycle:lifecycle-runtime:2.8.6', 'com.squareup.okhttp3:okhttp:4.12.0', 'androidx.appcompat:appcompat:1.7.0', 'com.facebook.fresco:fresco:3.2.0'])}\n{401 + i * 3}:|    |    |    \\--- org.jetbrains.kotlin:kotlin-stdlib:{random.Random(i).choice(['1.8.22', '1.9.0', '1.9.10'])} -> 1.9.24 (*)"
                        for i in range(60)
                    )
                    + "\n593-+--- project :react-native-ble-plx\n594:|    +--- com.polidea.rxandroidble2:rxandroidble:1.17.2\n595:|    \\--- org.jetbrains.kotlin:kotlin-stdlib-jdk8:1.7.10\n596-|         +--- org.jetbrains.kotlin:kotlin-stdlib:1.7.10 -> 1.9.24 (*)\n597:|         \\--- org.jetbrains.kotlin:kotlin-stdlib-jdk7:1.7.10"
                ),
            ),
            Call(
                "shell",
                _sh("cat node_modules/react-native-ble-plx/android/build.gradle", _RN_DIR),
                _codex_text(
                    "buildscript {\n    ext.kotlin_version = '1.7.10'\n    repositories { google(); mavenCentral() }\n    dependencies {\n        classpath 'com.android.tools.build:gradle:7.2.2'\n        classpath \"org.jetbrains.kotlin:kotlin-gradle-plugin:$kotlin_version\"\n    }\n}\n\napply plugin: 'com.android.library'\napply plugin: 'kotlin-android'\n\nandroid {\n    compileSdkVersion 33\n    defaultConfig { minSdkVersion 23 }\n}\n\ndependencies {\n    implementation \"com.facebook.react:react-native:+\"\n    implementation \"com.polidea.rxandroidble2:rxandroidble:1.17.2\"\n    implementation \"org.jetbrains.kotlin:kotlin-stdlib-jdk8:$kotlin_version\"\n}\n"
                ),
            ),
        ),
        A(
            "Found it: react-native-ble-plx 2.0.3 hard-codes kotlin_version 1.7.10 and declares kotlin-stdlib-jdk8 explicitly. Since Kotlin 1.8 the jdk7/jdk8 classes live inside kotlin-stdlib itself, so the app now carries both the merged stdlib from RN 0.76 and ble-plx's old split artifacts, which is the duplicate class failure."
        ),
        U("Can we just upgrade ble-plx to 3.x?"),
        A(
            "I'd avoid that this week. ble-plx 3.x rewrites the scanning API (startDeviceScan's callback shape and the permission flow changed), and our pairing flow is built on it; that is a rewrite, not a bump, two days before a release cut. Instead I'll import the kotlin-bom in the app so every kotlin-stdlib-jdk7/jdk8 artifact aligns to 1.9.24, where they are empty shells and the duplicates vanish, and patch ble-plx's kotlin_version with patch-package so its own compile uses the same Kotlin."
        ),
        U(
            "Makes sense. And while you're in there bump minSdkVersion to 26. Wait, no, Tomás just checked: 3% of our users are still on Android 7, so 24 is the most we can do."
        ),
        A(
            "Patching the app Gradle file and the root minSdkVersion.",
            Call(
                "apply_patch",
                _patch(
                    "android/app/build.gradle",
                    '    implementation("com.facebook.react:react-android")',
                    '    implementation(platform("org.jetbrains.kotlin:kotlin-bom:1.9.24"))\n    implementation("com.facebook.react:react-android")',
                    "dependencies {",
                ),
                _patched("android/app/build.gradle"),
            ),
            Call(
                "apply_patch",
                _patch(
                    "android/build.gradle",
                    "        minSdkVersion = 23",
                    "        minSdkVersion = 24",
                    "ext {",
                ),
                _patched("android/build.gradle"),
            ),
            Call(
                "shell",
                _sh(
                    "sed -i \"s/ext.kotlin_version = '1.7.10'/ext.kotlin_version = '1.9.24'/\" node_modules/react-native-ble-plx/android/build.gradle && npx patch-package react-native-ble-plx",
                    _RN_DIR,
                ),
                _codex_text(
                    "patch-package 8.0.0\n• Creating temporary folder\n• Installing react-native-ble-plx@2.0.3 with npm\n• Diffing your files with clean files\n✔ Created file patches/react-native-ble-plx+2.0.3.patch\n\n💡 react-native-ble-plx is on GitHub! To draft an issue based on your patch run\n\n    npx patch-package react-native-ble-plx --create-issue"
                ),
            ),
        ),
        A(
            "Rebuilding Android.",
            Call(
                "shell",
                _sh(
                    "cd android && ./gradlew clean :app:assembleDevDebug --console=plain 2>&1 | tail -n 200",
                    _RN_DIR,
                ),
                _codex_json(
                    _gradle_log(
                        2204,
                        190,
                        {
                            0.3: "> Task :react-native-ble-plx:compileDebugKotlin\nw: Language version 1.7 is deprecated and its support will be removed in a future version of Kotlin"
                        },
                    )
                    + "\n\nBUILD SUCCESSFUL in 6m 02s\n431 actionable tasks: 431 executed",
                    0,
                    362.4,
                ),
            ),
        ),
        U(
            "Android works, nice. Heads-up: the animation folks say don't take react-native-reanimated past 3.16, their worklets break on 3.17. Now iOS."
        ),
        A(
            "Keeping reanimated at ~3.16.3. Running pod install.",
            Call(
                "shell",
                _sh(
                    "cd ios && RCT_NEW_ARCH_ENABLED=0 bundle exec pod install 2>&1 | tail -n 170",
                    _RN_DIR,
                ),
                _codex_text(
                    _pod_install(
                        2205,
                        {
                            0.71: '[!] CocoaPods could not find compatible versions for pod "hermes-engine":\n  In snapshot (Podfile.lock):\n    hermes-engine (= 0.74.5)\n\n  In Podfile:\n    hermes-engine (from `../node_modules/react-native/sdks/hermes-engine/hermes-engine.podspec`)\n\nSpecs satisfying the `hermes-engine (from `../node_modules/react-native/sdks/hermes-engine/hermes-engine.podspec`)` dependency were found, but they required a higher minimum deployment target.\n\nYou have either:\n * changed the constraints of dependency `hermes-engine` inside your development pod `hermes-engine`.\n   You should run `pod update hermes-engine` to apply changes you\'ve made.',
                        },
                    ),
                    1,
                    48.2,
                ),
            ),
            Call(
                "shell",
                _sh(
                    "head -60 ios/Podfile && grep -n 'hermes-engine\\|IPHONEOS_DEPLOYMENT_TARGET' ios/Podfile.lock ios/Tandem.xcodeproj/project.pbxproj | head -40",
                    _RN_DIR,
                ),
                _codex_json(
                    "require Pod::Executable.execute_command('node', ['-p',\n  'require.resolve(\"react-native/scripts/react_native_pods.rb\", {paths: [process.argv[1]]})', __dir__]).strip\n\nplatform :ios, '13.4'\nprepare_react_native_project!\n\ntarget 'Tandem' do\n  config = use_native_modules!\n  use_react_native!(\n    :path => config[:reactNativePath],\n    :hermes_enabled => true,\n    :app_path => \"#{Pod::Config.instance.installation_root}/..\"\n  )\n  pod 'MultiplatformBleAdapter', '0.2.0'\n\n  post_install do |installer|\n    react_native_post_install(installer, config[:reactNativePath], :mac_catalyst_enabled => false)\n  end\nend\n"
                    + "\n".join(
                        f"ios/Tandem.xcodeproj/project.pbxproj:{900 + i * 41}:\t\t\t\tIPHONEOS_DEPLOYMENT_TARGET = {random.Random(2206 + i).choice(['13.4', '13.4', '15.1'])};"
                        for i in range(24)
                    )
                    + "\nios/Podfile.lock:211:  - hermes-engine (0.74.5):\nios/Podfile.lock:212:    - hermes-engine/Pre-built (= 0.74.5)\nios/Podfile.lock:1502:  hermes-engine: 8c1577f3fdb849cbe7729c2e7b5abc4b845e88f8"
                ),
            ),
        ),
        A(
            "RN 0.76 needs iOS 15.1 as the deployment target and the lockfile still pins the 0.74.5 Hermes. Raising the platform line and updating just hermes-engine.",
            Call(
                "apply_patch",
                _patch(
                    "ios/Podfile",
                    "platform :ios, '13.4'",
                    "platform :ios, min_ios_version_supported",
                ),
                _patched("ios/Podfile"),
            ),
            Call(
                "shell",
                _sh(
                    "cd ios && bundle exec pod update hermes-engine --no-repo-update 2>&1 | tail -n 40",
                    _RN_DIR,
                ),
                _codex_text(
                    "Analyzing dependencies\nDownloading dependencies\nInstalling hermes-engine 0.76.3 (was 0.74.5)\nGenerating Pods project\nPod installation complete! There are 71 dependencies from the Podfile and 84 total pods installed.",
                    0,
                    93.5,
                ),
            ),
        ),
        A(
            "Running the JS tests before calling it done.",
            Call(
                "shell",
                _sh("npx jest --ci 2>&1 | tail -n 300", _RN_DIR),
                _codex_json(
                    _jest(
                        2207,
                        {
                            0.44: "FAIL src/screens/Pairing/PairingScreen.test.tsx (12.004 s)\n  ● PairingScreen › shows retry after timeout\n\n    thrown: \"Exceeded timeout of 5000 ms for a test.\n    Add a timeout value to this test to increase the timeout, if this is a long-running test.\"\n\n      41 |   it('shows retry after timeout', async () => {\n      42 |     jest.useFakeTimers({ legacyFakeTimers: true });\n    > 43 |     render(<PairingScreen />);\n         |     ^\n      at Object.<anonymous> (src/screens/Pairing/PairingScreen.test.tsx:43:5)",
                            0.8: "FAIL src/ble/scanner/index.test.tsx\n  ● scanner › stops after scan window\n\n    expect(jest.fn()).toHaveBeenCalledTimes(expected)\n\n    Expected number of calls: 1\n    Received number of calls: 0",
                        },
                    )
                    + "\n\nTest Suites: 2 failed, 93 passed, 95 total\nTests:       2 failed, 412 passed, 414 total\nSnapshots:   38 passed, 38 total\nTime:        71.204 s",
                    1,
                    74.9,
                ),
            ),
        ),
        A(
            "Both failures have the same cause: React 18.3's scheduler under RN 0.76 yields with setImmediate, and legacy fake timers don't mock setImmediate, so the retry timer never fires and the test hangs. Switching those two tests to modern fake timers fixes it; the app code is fine.",
            Call(
                "apply_patch",
                _patch(
                    "src/screens/Pairing/PairingScreen.test.tsx",
                    "    jest.useFakeTimers({ legacyFakeTimers: true });",
                    "    jest.useFakeTimers();",
                ),
                _patched("src/screens/Pairing/PairingScreen.test.tsx"),
            ),
            Call(
                "apply_patch",
                _patch(
                    "src/ble/scanner/index.test.tsx",
                    "  jest.useFakeTimers({ legacyFakeTimers: true });",
                    "  jest.useFakeTimers();",
                ),
                _patched("src/ble/scanner/index.test.tsx"),
            ),
            Call(
                "shell",
                _sh("npx jest --ci src/screens/Pairing src/ble/scanner 2>&1 | tail -n 20", _RN_DIR),
                _codex_text(
                    "PASS src/screens/Pairing/PairingScreen.test.tsx\nPASS src/ble/scanner/index.test.tsx\n\nTest Suites: 2 passed, 2 total\nTests:       9 passed, 9 total\nTime:        6.118 s"
                ),
            ),
        ),
        U("CI says the Android job now takes 22 minutes, it was 14 before the bump. Is that us?"),
        A(
            "Partly: the clean build compiles the native New Architecture code for all four ABIs. Checking the history for CI changes.",
            Call(
                "shell",
                _sh(
                    "git log --since=2026-11-01 --format='%h %ad %an %s' --date=short | head -140",
                    _RN_DIR,
                ),
                _codex_json(
                    _git_log(
                        2208,
                        130,
                        _RN_AUTHORS,
                        _RN_SUBJECTS,
                        {
                            0.12: "b71e09d 2026-11-27 nia.b              ci: build all ABIs in debug to match release"
                        },
                    )
                ),
            ),
        ),
        A(
            "The CI slowdown is b71e09d building every ABI in debug, not the RN bump; restricting debug CI to arm64-v8a gets most of it back. State: Android builds with the kotlin-bom 1.9.24 and patches/react-native-ble-plx+2.0.3.patch, minSdkVersion is 24, iOS installs with hermes-engine 0.76.3 on iOS 15.1, reanimated stays on 3.16, and the two timer tests pass."
        ),
    ],
    [
        Fact("person", ("Tomás", "release"), "release owner"),
        Fact("tool_output", ("kotlin-stdlib-jdk8-1.7.10",), "duplicate class module, mid-log"),
        Fact("conclusion", ("ble-plx", "kotlin-stdlib"), "old stdlib came from ble-plx"),
        Fact("decision", ("kotlin-bom", "pairing"), "BOM instead of ble-plx 3.x and why"),
        Fact("number", ("minSdkVersion", "24"), "min SDK, the corrected value"),
        Fact("path", ("react-native-ble-plx+2.0.3.patch",), "patch written"),
        Fact("path", ("android/app/build.gradle",), "app gradle patched"),
        Fact("constraint", ("reanimated", "3.16"), "reanimated version ceiling"),
        Fact("tool_output", ("0.74.5",), "hermes pin in the lockfile"),
        Fact("tool_output", ("shows retry after timeout",), "failing jest test"),
        Fact("conclusion", ("setImmediate",), "why the timer tests hang"),
        Fact("number", ("22 minutes",), "CI time, said in conversation"),
        Fact("tool_output", ("b71e09d",), "commit that slowed CI, mid-log"),
    ],
)


# -- h3: CDN purge -----------------------------------------------------------------------------

_CDN_DIR = "/srv/storefront-edge"


def _headers(seed: int, count: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    blocks = []
    for _ in range(count):
        sku = rng.randint(10000, 99999)
        hit = rng.choice(["HIT", "HIT", "MISS", "HIT, HIT"])
        blocks.append(
            f"== https://www.lumen-outdoor.com/p/{rng.choice(['tents', 'boots', 'jackets', 'stoves', 'packs'])}/{sku}\n"
            f"HTTP/2 200\ncontent-type: text/html; charset=utf-8\ncache-control: public, max-age=0, s-maxage=86400\n"
            f"surrogate-key: sku:{sku} cat:{rng.choice(['camp', 'hike', 'climb', 'run'])} brand:{rng.randint(10, 99)} page:pdp\n"
            f"x-served-by: cache-{rng.choice(['fra', 'ams', 'lhr', 'cdg'])}-e{rng.randint(1000, 9999)}-{rng.choice(['FRA', 'AMS', 'LHR', 'CDG'])}\n"
            f"x-cache: {hit}\nage: {rng.randint(0, 86000)}\nx-price-version: {rng.randint(1_700_000, 1_799_999)}"
        )
    return _bury(blocks, planted)


_PURGE_ERRORS = [
    "consumer price-changed message {n} failed after 5 attempts: HTTPError 503 Service Unavailable for url: https://api.fastly.com/service/5hTq8Rm2xVb1/purge/sku%3A{sku}",
    "client httpx.ConnectError: [Errno 111] Connection refused (api.fastly.com:443 via egress-proxy.net:3128)",
    "client httpx.ReadTimeout: The read operation timed out (purge sku%3A{sku})",
    "consumer could not decode message {n}: json.decoder.JSONDecodeError: Expecting ',' delimiter: line 1 column {col}",
    "consumer KeyError: 'sku' in price-changed message {n} (schema_version=1)",
    "consumer kafka commit failed: CommitFailedError: Commit cannot be completed since the group has already rebalanced",
    "client HTTPError 502 Bad Gateway from egress proxy for https://api.fastly.com/service/5hTq8Rm2xVb1/purge/sku%3A{sku}",
    "health liveness handler raised RuntimeError: Event loop is closed",
]


def _purge_log(seed: int, count: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    lines = []
    for i in range(count):
        ts = (
            f"2026-12-07T03:{i * 60 // count:02d}:{rng.randint(0, 59):02d}.{rng.randint(100, 999)}Z"
        )
        r = rng.random()
        sku = rng.randint(10000, 99999)
        if r < 0.7:
            lines.append(
                f'{ts} INFO purge_worker.client POST https://api.fastly.com/service/5hTq8Rm2xVb1/purge/sku%3A{sku} status=200 body={{"status": "ok", "id": "{rng.randint(10000, 29999)}-{1733540000 + i * 37}-{rng.randint(1000000, 9999999)}"}} took={rng.randint(40, 390)}ms'
            )
        elif r < 0.82:
            lines.append(
                f"{ts} WARN purge_worker.client POST https://api.fastly.com/service/5hTq8Rm2xVb1/purge/sku%3A{sku} status=429 Too Many Requests retry_after={rng.randint(5, 60)} attempt={rng.randint(1, 4)}"
            )
        elif r < 0.9:
            lines.append(
                f"{ts} ERROR purge_worker.{rng.choice(_PURGE_ERRORS)}".format(
                    n=rng.randint(10**8, 10**9), sku=sku, col=rng.randint(20, 400)
                )
            )
        else:
            lines.append(
                f"{ts} INFO purge_worker.consumer batch done: {rng.randint(50, 500)} messages, {rng.randint(50, 500)} keys, lag={rng.randint(0, 900)}s"
            )
    return _bury(lines, planted)


def _py_module(seed: int, count: int, prefix: str) -> str:
    rng = random.Random(seed)
    words = ["price", "sku", "batch", "key", "message", "token", "region", "payload"]
    lines: list[str] = []
    for i in range(count):
        a, b = rng.choice(words), rng.choice(words)
        lines += [
            f"def {prefix}_{a}_{i}({b}: dict[str, object]) -> list[str]:",
            f'    """Collect the {a} values of one {b}."""',
            f"    values = [str(v) for v in {b}.get('{a}s', [])]",
            f"    log.debug('{prefix} %s -> %d values', '{a}', len(values))",
            "    return sorted(set(values))",
            "",
        ]
    return "\n".join(lines)


_CDN_CLIENT = '''"""Fastly purge client used by the price-change consumer."""
from __future__ import annotations

import logging
from urllib.parse import quote

import httpx

log = logging.getLogger(__name__)
API = "https://api.fastly.com"


class PurgeClient:
    def __init__(self, service_id: str, token: str, soft: bool = True) -> None:
        self._service = service_id
        self._http = httpx.Client(base_url=API, headers={"Fastly-Key": token}, timeout=10)
        self._soft = soft

    def purge_key(self, key: str) -> str:
        headers = {"Fastly-Soft-Purge": "1"} if self._soft else {}
        resp = self._http.post(f"/service/{self._service}/purge/{quote(key, safe='')}", headers=headers)
        resp.raise_for_status()
        return resp.json()["id"]
'''

_CDN_AUTHORS = ["hana.sato", "f.mensah", "liam.o", "ruta.k", "dependabot[bot]", "carlos.v"]
_CDN_SUBJECTS = [
    "Add brand pages to the surrogate key set",
    "Retry 503 from purge API with backoff (#{n})",
    "Quote surrogate keys in purge URLs",
    "Bump httpx to 0.27.{n}",
    "Log purge ids for audit",
    "Merge pull request #{n} from storefront/edge-logging",
    "Set s-maxage on category pages",
    "Move Fastly service id to settings",
    "Soft purge by default",
    "Consume price-changed from the v2 topic",
]

H3 = Session(
    "h3-cdn-purge",
    [
        U(
            f"Customers keep seeing yesterday's prices on product pages after the nightly repricing. The purge worker logs say every purge returned 200. Hana Sato is the edge team lead and owns the Fastly config; she's asked to review any VCL change. Code is in {_CDN_DIR}."
        ),
        A(
            "Checking a sample of product pages' cache headers and the purge worker's log from the repricing run.",
            Call(
                "Bash",
                {
                    "command": f"cd {_CDN_DIR} && scripts/sample_headers.sh --from data/repriced-2026-12-07.txt --count 60",
                    "description": "Cache headers of repriced pages",
                },
                _headers(
                    2301,
                    32,
                    {
                        0.55: "== https://www.lumen-outdoor.com/p/tents/88120\nHTTP/2 200\ncontent-type: text/html; charset=utf-8\ncache-control: public, max-age=0, s-maxage=86400\nsurrogate-key: sku:88120 cat:camp brand:41 page:pdp\nx-served-by: cache-fra-etou8220050-FRA\nx-cache: HIT\nage: 84213\nx-price-version: 1741177"
                    },
                ),
            ),
            Call(
                "Bash",
                {
                    "command": "kubectl -n storefront logs deploy/purge-worker --since=6h | grep -E 'purge|batch' | head -240",
                    "description": "Purge worker log",
                },
                _purge_log(
                    2302,
                    160,
                    {
                        0.48: '2026-12-07T03:28:40.611Z INFO purge_worker.client POST https://api.fastly.com/service/5hTq8Rm2xVb1/purge/sku%3A88120 status=200 body={"status": "ok", "id": "19283-1733542120-4471920"} took=88ms'
                    },
                ),
            ),
        ),
        A(
            "Page 88120 was served from cache 23 hours after its purge returned ok. Reading the client and its settings.",
            Call(
                "Read",
                {"file_path": f"{_CDN_DIR}/edge/purge_worker/client.py"},
                _numbered(_CDN_CLIENT + "\n\n" + _py_module(2303, 16, "client")),
            ),
            Call(
                "Read",
                {"file_path": f"{_CDN_DIR}/edge/purge_worker/settings.py"},
                _numbered(
                    "\n".join(
                        f"{k}_{i} = {random.Random(2304 + i).choice(['True', 'False', '30', '120', '0.5', repr('eu-central')])}"
                        for i, k in enumerate(
                            [
                                "PURGE_TIMEOUT",
                                "RETRY_BACKOFF",
                                "FEATURE_FLAG",
                                "BATCH_WINDOW",
                                "REGION",
                            ]
                            * 18
                        )
                    )
                    + "\nFASTLY_SERVICE_ID = '5hTq8Rm2xVb1'\nPURGE_BATCH_SIZE = 1\nSOFT_PURGE = True\n"
                ),
            ),
            Call(
                "Grep",
                {
                    "pattern": "surrogate",
                    "path": _CDN_DIR,
                    "output_mode": "content",
                    "-n": True,
                    "-i": True,
                },
                "\n".join(
                    f'edge/vcl/{f}.vcl:{random.Random(2305 + i).randint(10, 400)}:  set beresp.http.Surrogate-Key = beresp.http.Surrogate-Key " {t}";'
                    for i, (f, t) in enumerate(
                        (f, t)
                        for f in ["pdp", "plp", "brand", "search", "main"]
                        for t in ["page:x", "region:eu", "lang:de", "lang:en"]
                    )
                )
                + "\norigin/app/middleware/cache_headers.py:44:        response['Surrogate-Key'] = ' '.join(f'sku:{s}' for s in skus)\nedge/vcl/main.vcl:12:  # keys arrive from origin verbatim; purge keys must match them byte for byte",
            ),
        ),
        A(
            "That's the bug. The client runs quote(key, safe='') over each key, so sku:88120 goes out as sku%3A88120; Fastly matches surrogate keys literally and does not decode the path, so each purge succeeds against a key no object carries and nothing is invalidated. The 200 only means the purge request was accepted. Commit 'Quote surrogate keys in purge URLs' introduced it."
        ),
        U(
            "Oh no. Whatever you do, never fire a purge-all on the prod service to clean this up. The origin can't take a full cache refill at peak, it fell over last time."
        ),
        A(
            "Understood, no purge-all. I'll move the client to Fastly's batch surrogate-key purge: one POST with a JSON body of surrogate_keys, which isn't URL-encoded at all. The reason is twofold: it removes the encoding problem entirely, and one call per batch instead of one per SKU keeps us under the API rate limit that the 429s show we already hit.",
            Call(
                "Bash",
                {
                    "command": f"git -C {_CDN_DIR} log --since=2026-11-01 --format='%h %ad %an %s' --date=short | head -130",
                    "description": "Recent commits",
                },
                _git_log(
                    2306,
                    120,
                    _CDN_AUTHORS,
                    _CDN_SUBJECTS,
                    {
                        0.22: "4c8d1e0 2026-11-24 liam.o             Quote surrogate keys in purge URLs"
                    },
                ),
            ),
        ),
        U(
            "Batch limit is 256 keys per request per the docs. Hmm, Hana says our contract caps it lower: 128 keys per call."
        ),
        A(
            "Using 128 keys per call.",
            Call(
                "Edit",
                {
                    "file_path": f"{_CDN_DIR}/edge/purge_worker/client.py",
                    "old_string": '    def purge_key(self, key: str) -> str:\n        headers = {"Fastly-Soft-Purge": "1"} if self._soft else {}\n        resp = self._http.post(f"/service/{self._service}/purge/{quote(key, safe=\'\')}", headers=headers)\n        resp.raise_for_status()\n        return resp.json()["id"]',
                    "new_string": '    def purge_keys(self, keys: list[str]) -> dict[str, str]:\n        """Batch purge; keys go in the body verbatim (a URL would encode their colons)."""\n        headers = {"Fastly-Soft-Purge": "1"} if self._soft else {}\n        ids: dict[str, str] = {}\n        for start in range(0, len(keys), MAX_KEYS_PER_CALL):\n            chunk = keys[start : start + MAX_KEYS_PER_CALL]\n            resp = self._http.post(f"/service/{self._service}/purge", json={"surrogate_keys": chunk}, headers=headers)\n            resp.raise_for_status()\n            ids.update(resp.json())\n        return ids',
                },
                _edited(
                    f"{_CDN_DIR}/edge/purge_worker/client.py",
                    '    def purge_keys(self, keys: list[str]) -> dict[str, str]:\n        """Batch purge; keys go in the body verbatim (a URL would encode their colons)."""\n        headers = {"Fastly-Soft-Purge": "1"} if self._soft else {}\n        ids: dict[str, str] = {}\n        for start in range(0, len(keys), MAX_KEYS_PER_CALL):\n            chunk = keys[start : start + MAX_KEYS_PER_CALL]',
                    19,
                ),
            ),
            Call(
                "Edit",
                {
                    "file_path": f"{_CDN_DIR}/edge/purge_worker/client.py",
                    "old_string": 'API = "https://api.fastly.com"',
                    "new_string": 'API = "https://api.fastly.com"\nMAX_KEYS_PER_CALL = 128  # our contract, below the public 256',
                },
                _edited(
                    f"{_CDN_DIR}/edge/purge_worker/client.py",
                    'API = "https://api.fastly.com"\nMAX_KEYS_PER_CALL = 128  # our contract, below the public 256',
                    10,
                ),
            ),
            Call(
                "Read",
                {"file_path": f"{_CDN_DIR}/edge/purge_worker/consumer.py"},
                _numbered(
                    "from edge.purge_worker.client import PurgeClient\n\n"
                    + _py_module(2307, 22, "consumer")
                    + "\ndef handle(batch, client: PurgeClient) -> None:\n    for message in batch:\n        client.purge_key(f\"sku:{message['sku']}\")\n"
                ),
            ),
            Call(
                "Edit",
                {
                    "file_path": f"{_CDN_DIR}/edge/purge_worker/consumer.py",
                    "old_string": "    for message in batch:\n        client.purge_key(f\"sku:{message['sku']}\")",
                    "new_string": "    client.purge_keys(sorted({f\"sku:{message['sku']}\" for message in batch}))",
                },
                _edited(
                    f"{_CDN_DIR}/edge/purge_worker/consumer.py",
                    "def handle(batch, client: PurgeClient) -> None:\n    client.purge_keys(sorted({f\"sku:{message['sku']}\" for message in batch}))",
                    136,
                ),
            ),
        ),
        A(
            "Adding a test that the keys reach the API byte for byte, then running the suite.",
            Call(
                "Write",
                {
                    "file_path": f"{_CDN_DIR}/tests/purge_worker/test_client_encoding.py",
                    "content": "import httpx\n\nfrom edge.purge_worker.client import PurgeClient\n\n\ndef test_keys_are_sent_verbatim_in_the_body(respx_mock):\n    route = respx_mock.post('https://api.fastly.com/service/svc/purge').mock(return_value=httpx.Response(200, json={}))\n    PurgeClient('svc', 'token').purge_keys(['sku:88120', 'sku:10001'])\n    assert route.calls.last.request.content == b'{\"surrogate_keys\": [\"sku:88120\", \"sku:10001\"]}'\n\n\ndef test_batches_of_at_most_128(respx_mock):\n    route = respx_mock.post('https://api.fastly.com/service/svc/purge').mock(return_value=httpx.Response(200, json={}))\n    PurgeClient('svc', 'token').purge_keys([f'sku:{i}' for i in range(300)])\n    assert route.call_count == 3\n",
                },
                f"File created successfully at: {_CDN_DIR}/tests/purge_worker/test_client_encoding.py",
            ),
            Call(
                "Bash",
                {
                    "command": f"cd {_CDN_DIR} && python -m pytest -q tests 2>&1 | tail -n 220",
                    "description": "Run tests",
                },
                _pytest(
                    2308,
                    160,
                    [
                        "tests/purge_worker/test_consumer.py",
                        "tests/purge_worker/test_settings.py",
                        "tests/origin/test_cache_headers.py",
                        "tests/vcl/test_render.py",
                    ],
                    {
                        0.35: "tests/purge_worker/test_client_encoding.py::test_keys_are_sent_verbatim_in_the_body PASSED",
                        0.36: "tests/purge_worker/test_client_encoding.py::test_batches_of_at_most_128 PASSED",
                        0.6: "tests/purge_worker/test_consumer.py::test_handle_purges_each_sku FAILED",
                    },
                    "=================================== FAILURES ===================================\n______________________ test_handle_purges_each_sku ______________________\n\n    def test_handle_purges_each_sku():\n        client = Mock()\n        handle([{'sku': 1}, {'sku': 2}], client)\n>       assert client.purge_key.call_count == 2\nE       AssertionError: assert 0 == 2\nE        +  where 0 = <Mock name='mock.purge_key' id='140221998164432'>.call_count\n\ntests/purge_worker/test_consumer.py:31: AssertionError\n=========================== short test summary info ============================\nFAILED tests/purge_worker/test_consumer.py::test_handle_purges_each_sku - AssertionError: assert 0 == 2\n======================== 1 failed, 162 passed in 8.41s =========================",
                ),
            ),
        ),
        A(
            "That consumer test asserted the old per-key call; updating it to the batch call.",
            Call(
                "Edit",
                {
                    "file_path": f"{_CDN_DIR}/tests/purge_worker/test_consumer.py",
                    "old_string": "    assert client.purge_key.call_count == 2",
                    "new_string": "    client.purge_keys.assert_called_once_with(['sku:1', 'sku:2'])",
                },
                _edited(
                    f"{_CDN_DIR}/tests/purge_worker/test_consumer.py",
                    "    client.purge_keys.assert_called_once_with(['sku:1', 'sku:2'])",
                    31,
                ),
            ),
            Call(
                "Bash",
                {
                    "command": f"cd {_CDN_DIR} && python -m pytest -q tests/purge_worker 2>&1 | tail -n 3",
                    "description": "Purge worker tests",
                },
                "........................................................................ [ 84%]\n.............                                                            [100%]\n85 passed in 2.07s",
            ),
        ),
        U(
            "For scale: about 3,400 SKUs change price in a typical nightly run. Also, product pages should cache for 24 hours at the edge. Actually, merchandising wants that lower in case a purge ever misses again: make it 6 hours."
        ),
        A(
            "Setting s-maxage to 6 hours (21600) for product pages in the origin middleware. At 3,400 SKUs and 128 per call that is 27 purge calls per night instead of 3,400.",
            Call(
                "Read",
                {"file_path": f"{_CDN_DIR}/origin/app/middleware/cache_headers.py"},
                _numbered(
                    _py_module(2309, 12, "headers")
                    + "\nPDP_S_MAXAGE = 86400\nPLP_S_MAXAGE = 3600\n"
                ),
            ),
            Call(
                "Edit",
                {
                    "file_path": f"{_CDN_DIR}/origin/app/middleware/cache_headers.py",
                    "old_string": "PDP_S_MAXAGE = 86400",
                    "new_string": "PDP_S_MAXAGE = 21600  # 6 hours: bounds how long a missed purge can show a stale price",
                },
                _edited(
                    f"{_CDN_DIR}/origin/app/middleware/cache_headers.py",
                    "PDP_S_MAXAGE = 21600  # 6 hours: bounds how long a missed purge can show a stale price\nPLP_S_MAXAGE = 3600",
                    74,
                ),
            ),
        ),
        A(
            "Re-purging yesterday's repriced SKUs through the new batch path on staging first, then checking a page.",
            Call(
                "Bash",
                {
                    "command": f"cd {_CDN_DIR} && python -m edge.purge_worker.replay --file data/repriced-2026-12-07.txt --service staging && curl -sI https://staging.lumen-outdoor.com/p/tents/88120 | grep -iE 'x-cache|age|x-price'",
                    "description": "Replay purges on staging",
                },
                "\n".join(
                    f"batch {i + 1}/27: 128 keys purged, id={random.Random(2310 + i).randint(10000, 29999)}-1733587{i:03d}"
                    for i in range(26)
                )
                + "\nbatch 27/27: 72 keys purged\nx-cache: MISS\nage: 0\nx-price-version: 1741912",
            ),
        ),
        A(
            "Fixed: purges now go in one POST body per 128 keys, verbatim, so sku:88120 matches; staging shows a MISS and the new price version. Hana still needs to review before prod; no purge-all at any point."
        ),
    ],
    [
        Fact("person", ("Hana", "edge"), "edge lead who reviews VCL"),
        Fact("tool_output", ("84213",), "age of the stale page, mid-headers"),
        Fact("tool_output", ("4471920",), "purge id for sku 88120, mid-log"),
        Fact("conclusion", ("sku%3A88120",), "keys went out percent-encoded"),
        Fact("constraint", ("purge-all",), "never purge-all on prod"),
        Fact("decision", ("surrogate_keys", "rate limit"), "batch POST and why"),
        Fact("number", ("128 keys",), "batch cap, the corrected value"),
        Fact("path", ("purge_worker/client.py",), "client edited"),
        Fact("path", ("test_client_encoding.py",), "test written"),
        Fact("tool_output", ("test_handle_purges_each_sku",), "failing test"),
        Fact("number", ("3,400",), "SKUs per night, said in conversation"),
        Fact("number", ("6 hours",), "edge TTL, the later value"),
        Fact("tool_output", ("4c8d1e0",), "commit that introduced quoting"),
    ],
)


# -- h4: cron job double run -------------------------------------------------------------------

_CRON_DIR = "/work/billing-jobs"


def _syslog(seed: int, count: int, host: str, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    jobs = [
        "/opt/billing/bin/rotate-exports",
        "/usr/lib/php/sessionclean",
        "/opt/billing/bin/fx-rates --source ecb",
        "/opt/billing/bin/ledger-snapshot",
        "test -x /usr/sbin/anacron || ( cd / && run-parts --report /etc/cron.daily )",
        "/opt/monitoring/bin/push-node-metrics",
    ]
    lines = []
    for i in range(count):
        ts = f"Dec  {rng.choice([4, 5, 6, 7])} 0{i * 9 // count}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
        r = rng.random()
        pid = rng.randint(10000, 99999)
        if r < 0.6:
            lines.append(
                f"{ts} {host} CRON[{pid}]: ({rng.choice(['root', 'deploy', 'billing'])}) CMD ({rng.choice(jobs)})"
            )
        elif r < 0.75:
            lines.append(
                f"{ts} {host} CRON[{pid}]: pam_unix(cron:session): session {rng.choice(['opened', 'closed'])} for user {rng.choice(['root', 'deploy'])}"
            )
        elif r < 0.85:
            lines.append(
                f"{ts} {host} systemd[1]: Started session-{rng.randint(1000, 9999)}.scope - Session {rng.randint(1000, 9999)} of User deploy."
            )
        elif r < 0.93:
            lines.append(
                f"{ts} {host} fx-rates[{pid}]: ERROR fetching https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml: ReadTimeout(read timeout=10)"
            )
        else:
            lines.append(
                f"{ts} {host} ledger-snapshot[{pid}]: WARNING snapshot took {rng.randint(200, 900)}s, longer than {rng.choice([180, 300])}s budget"
            )
    return _bury(lines, planted)


def _jobs_table(seed: int, count: int) -> str:
    rng = random.Random(seed)
    names = [
        "fx-rates",
        "ledger-snapshot",
        "dunning-reminders",
        "invoice-pdf-render",
        "export-rotate",
        "usage-rollup",
    ]
    lines = ["NAME                                  COMPLETIONS   DURATION   AGE"]
    for _ in range(count):
        lines.append(
            f"{rng.choice(names)}-{rng.randint(29_000_000, 29_100_000):<26} 1/1           {rng.randint(8, 900)}s{' ' * 6}{rng.randint(1, 9)}d{rng.randint(0, 23)}h"
        )
    return "\n".join(lines)


def _dup_counts(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "    day     | reminders_sent | distinct_invoices | duplicates",
        "------------+----------------+-------------------+-----------",
    ]
    for d in range(1, 61):
        day = f"2026-{10 + (d > 31):02d}-{(d - 1) % 31 + 1:02d}"
        sent = rng.randint(1800, 4200)
        dup = 0 if d < 38 else rng.randint(1500, 4000) // 2
        if d == 49:
            dup = 2318
        lines.append(f" {day} | {sent + dup:>14} | {sent:>17} | {dup:>10}")
    return "\n".join([*lines, "(60 rows)"])


_CRONJOB_YAML = """apiVersion: batch/v1
kind: CronJob
metadata:
  name: dunning-reminders
  namespace: billing
  labels:
    app.kubernetes.io/part-of: billing-jobs
spec:
  schedule: "0 6 * * *"
  timeZone: "Europe/Berlin"
  concurrencyPolicy: Allow
  startingDeadlineSeconds: 3600
  successfulJobsHistoryLimit: 3
  failedJobsHistoryLimit: 5
  jobTemplate:
    spec:
      backoffLimit: 2
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: dunning
              image: registry.billing.internal/billing-jobs:2026.11.30
              args: ["python", "-m", "dunning.run_reminders"]
"""

H4 = Session(
    "h4-cron-double-run",
    [
        U(
            f"Support is getting angry mails: customers got the same payment reminder twice this morning, some three times. Greta from the support team is collecting the tickets. Olu Adeyemi is billing's tech lead, ping him before changing anything in the billing namespace. Repo: {_CRON_DIR}."
        ),
        A(
            "Counting duplicate reminders per day and listing the job runs in the cluster.",
            Call(
                "shell",
                _sh(
                    'psql "$BILLING_RO_DSN" -c "SELECT date(sent_at) AS day, count(*) AS reminders_sent, count(DISTINCT invoice_id) AS distinct_invoices, count(*) - count(DISTINCT invoice_id) AS duplicates FROM reminder_sends WHERE sent_at > now() - interval \'60 days\' GROUP BY 1 ORDER BY 1"',
                    _CRON_DIR,
                ),
                _codex_json(_dup_counts(2401)),
            ),
            Call(
                "shell",
                _sh(
                    "kubectl -n billing get jobs --sort-by=.metadata.creationTimestamp | tail -n 120",
                    _CRON_DIR,
                ),
                _codex_text(_jobs_table(2402, 118)),
            ),
        ),
        A(
            "Duplicates start on Nov 7 and never stop, and the CronJob itself only creates one Job per day. Something else is also running the reminders. Checking the old batch VMs' cron logs.",
            Call(
                "shell",
                _sh(
                    "for h in batch-01 batch-02 batch-03; do ssh $h 'sudo grep CRON /var/log/syslog | tail -n 90'; done",
                    _CRON_DIR,
                ),
                _codex_text(
                    _syslog(2403, 90, "batch-01", {})
                    + "\n"
                    + _syslog(
                        2404,
                        90,
                        "batch-02",
                        {
                            0.57: "Dec  7 06:00:01 batch-02 CRON[41877]: (deploy) CMD (/opt/dunning/bin/run-reminders --env prod >> /var/log/dunning/reminders.log 2>&1)",
                            0.58: "Dec  7 06:00:02 batch-02 CRON[41876]: (CRON) info (No MTA installed, discarding output)",
                        },
                    )
                    + "\n"
                    + _syslog(2405, 90, "batch-03", {}),
                    0,
                    11.8,
                ),
            ),
            Call(
                "shell",
                _sh(
                    "ssh batch-02 'ls -la /etc/cron.d/ && cat /etc/cron.d/dunning && sudo tail -n 60 /var/log/dunning/reminders.log'",
                    _CRON_DIR,
                ),
                _codex_json(
                    "total 40\n-rw-r--r-- 1 root root 102 Jun 11 2024 e2scrub_all\n-rw-r--r-- 1 root root 201 Mar  3 2025 dunning\n-rw-r--r-- 1 root root 188 Mar  3 2025 fx-rates\n-rw-r--r-- 1 root root 396 Feb  9 2025 sysstat\n"
                    + "# m h dom mon dow user command\n0 6 * * * deploy /opt/dunning/bin/run-reminders --env prod >> /var/log/dunning/reminders.log 2>&1\n"
                    + "\n".join(
                        f"2026-12-0{random.Random(2406 + i).randint(1, 7)} 06:{i // 10:02d}:{random.Random(i).randint(0, 59):02d} INFO sent reminder invoice=INV-{random.Random(i * 3).randint(200000, 299999)} level={random.Random(i * 5).choice([1, 1, 2, 3])} channel=email"
                        for i in range(52)
                    )
                    + "\n2026-12-07 06:09:41 ERROR smtp relay rejected batch: 421 4.7.0 Try again later, closing connection\n2026-12-07 06:09:42 INFO run finished: 3881 reminders, 7 errors"
                ),
            ),
        ),
        A(
            "Found it. The reminders run from two schedulers: the Kubernetes CronJob dunning-reminders that was introduced on Nov 7, and the old /etc/cron.d/dunning entry on batch-02 that was never removed when the job moved to the cluster. Both fire at 06:00 Berlin time and neither knows about the other. The triple sends come from the CronJob's concurrencyPolicy Allow plus a retry on the days a run overlapped its backoff."
        ),
        U(
            "Olu's fine with removing the batch-02 entry. But he wants a guard in the job too, because one day someone will run it by hand. The rule from finance: a customer must never get more than one reminder per invoice per day."
        ),
        A(
            "Removing the VM cron entry now, then the guard. For the guard I'll take a Postgres advisory lock (pg_try_advisory_lock) at the start of the run rather than a Redis lock: the job already holds a Postgres connection for its whole run, and the lock is released automatically if the process dies, whereas a Redis lock with a TTL can expire in the middle of a long run and let a second runner in.",
            Call(
                "shell",
                _sh(
                    "ssh batch-02 'sudo mv /etc/cron.d/dunning /root/dunning.cron.disabled && ls /etc/cron.d'",
                    _CRON_DIR,
                ),
                _codex_text("e2scrub_all\nfx-rates\nsysstat"),
            ),
            Call(
                "shell",
                _sh("cat dunning/run_reminders.py dunning/db.py", _CRON_DIR),
                _codex_json(
                    "from dunning.db import connect\nfrom dunning.mailer import send\n\n\ndef main() -> None:\n    with connect() as conn:\n        for invoice in due_invoices(conn):\n            send(invoice)\n            record_send(conn, invoice)\n\n"
                    + _py_module(2407, 18, "dunning")
                    + "\n\n# db.py\nimport psycopg\n\n\ndef connect():\n    return psycopg.connect(os.environ['BILLING_DSN'], autocommit=True)\n"
                ),
            ),
        ),
        A(
            "Writing the lock helper and wiring it into the entry point.",
            Call(
                "apply_patch",
                {
                    "input": "*** Begin Patch\n*** Add File: dunning/lock.py\n+\"\"\"One runner at a time: a session-level Postgres advisory lock.\"\"\"\n+from contextlib import contextmanager\n+\n+LOCK_KEY = 0x64756E6E  # 'dunn'\n+\n+\n+@contextmanager\n+def single_runner(conn):\n+    got = conn.execute('SELECT pg_try_advisory_lock(%s)', (LOCK_KEY,)).fetchone()[0]\n+    try:\n+        yield got\n+    finally:\n+        if got:\n+            conn.execute('SELECT pg_advisory_unlock(%s)', (LOCK_KEY,))\n*** End Patch"
                },
                "Success. Updated the following files:\nA dunning/lock.py",
            ),
            Call(
                "apply_patch",
                _patch(
                    "dunning/run_reminders.py",
                    "    with connect() as conn:\n        for invoice in due_invoices(conn):",
                    "    with connect() as conn, single_runner(conn) as got:\n        if not got:\n            log.warning('another runner holds the dunning lock; exiting')\n            return\n        for invoice in due_invoices(conn, not_reminded_since=today()):",
                    "def main() -> None:",
                ),
                _patched("dunning/run_reminders.py"),
            ),
            Call(
                "shell",
                _sh("python -m pytest -q tests 2>&1 | tail -n 230", _CRON_DIR),
                _codex_text(
                    _pytest(
                        2408,
                        200,
                        [
                            "tests/test_mailer.py",
                            "tests/test_due_invoices.py",
                            "tests/test_templates.py",
                            "tests/test_fx.py",
                        ],
                        {0.7: "tests/test_lock.py::test_second_runner_skips_when_lock_held FAILED"},
                        "=================================== FAILURES ===================================\n__________________ test_second_runner_skips_when_lock_held __________________\n\n    def test_second_runner_skips_when_lock_held(pg, mailer):\n        with pg.connect() as holder, single_runner(holder):\n            main()\n>       assert mailer.sent == []\nE       AssertionError: assert [<Sent INV-200113>, <Sent INV-200114>, ...14 more] == []\n\ntests/test_lock.py:22: AssertionError\n----------------------------- Captured log call ------------------------------\nWARNING  dunning.db:db.py:9 BILLING_DSN points at pgbouncer:6432 (pool_mode=transaction)\n=========================== short test summary info ============================\nFAILED tests/test_lock.py::test_second_runner_skips_when_lock_held - AssertionError: assert [<Sent INV-200113>, ...] == []\n=================== 1 failed, 200 passed, 3 warnings in 19.63s ===================",
                    ),
                    1,
                    21.4,
                ),
            ),
        ),
        A(
            "The lock test fails because the job connects through PgBouncer in transaction pooling mode: a session-level advisory lock taken on one server connection is invisible to the next statement, which may run on another. The job has to connect directly to Postgres for the lock. Pointing the lock at BILLING_DIRECT_DSN.",
            Call(
                "apply_patch",
                _patch(
                    "dunning/db.py",
                    "    return psycopg.connect(os.environ['BILLING_DSN'], autocommit=True)",
                    "    # advisory locks are per session: PgBouncer's transaction pooling would drop them\n    return psycopg.connect(os.environ['BILLING_DIRECT_DSN'], autocommit=True)",
                    "def connect():",
                ),
                _patched("dunning/db.py"),
            ),
            Call(
                "shell",
                _sh(
                    "python -m pytest -q tests/test_lock.py tests/test_due_invoices.py 2>&1 | tail -n 5",
                    _CRON_DIR,
                ),
                _codex_json(
                    "..........................                                               [100%]\n26 passed in 4.12s"
                ),
            ),
        ),
        U(
            "Move the schedule while you're at it: 06:00 is too early, finance wants 08:00. Correction, 07:15 Europe/Berlin, so it lands before the support shift starts at 07:30."
        ),
        A(
            "Updating the CronJob: schedule 07:15 Berlin, concurrencyPolicy Forbid, and a start deadline.",
            Call(
                "shell",
                _sh("cat deploy/k8s/cronjobs/dunning-reminders.yaml", _CRON_DIR),
                _codex_text(_CRONJOB_YAML),
            ),
            Call(
                "apply_patch",
                _patch(
                    "deploy/k8s/cronjobs/dunning-reminders.yaml",
                    '  schedule: "0 6 * * *"\n  timeZone: "Europe/Berlin"\n  concurrencyPolicy: Allow\n  startingDeadlineSeconds: 3600',
                    '  schedule: "15 7 * * *"\n  timeZone: "Europe/Berlin"\n  concurrencyPolicy: Forbid\n  startingDeadlineSeconds: 600',
                    "spec:",
                ),
                _patched("deploy/k8s/cronjobs/dunning-reminders.yaml"),
            ),
        ),
        U(
            "Olu read the diff: 600 seconds of start deadline still lets a run start at 07:25, after the shift begins. Drop it to 200."
        ),
        A(
            "Setting startingDeadlineSeconds to 200.",
            Call(
                "apply_patch",
                _patch(
                    "deploy/k8s/cronjobs/dunning-reminders.yaml",
                    "  startingDeadlineSeconds: 600",
                    "  startingDeadlineSeconds: 200",
                ),
                _patched("deploy/k8s/cronjobs/dunning-reminders.yaml"),
            ),
            Call(
                "shell",
                _sh(
                    "kubectl -n billing diff -f deploy/k8s/cronjobs/dunning-reminders.yaml; kubectl -n billing get events --field-selector involvedObject.kind=CronJob | tail -n 80",
                    _CRON_DIR,
                ),
                _codex_text(
                    "diff -u -N /tmp/LIVE-1203/batch.v1.CronJob.billing.dunning-reminders /tmp/MERGED-1203/batch.v1.CronJob.billing.dunning-reminders\n-  schedule: 0 6 * * *\n+  schedule: 15 7 * * *\n-  concurrencyPolicy: Allow\n+  concurrencyPolicy: Forbid\n-  startingDeadlineSeconds: 3600\n+  startingDeadlineSeconds: 200\n"
                    + "\n".join(
                        f"{random.Random(2409 + i).randint(1, 59)}m   {random.Random(i).choice(['Normal', 'Normal', 'Warning'])}   {random.Random(i * 7).choice(['SuccessfulCreate', 'SawCompletedJob', 'SuccessfulDelete', 'UnexpectedJob', 'MissSchedule'])}   cronjob/{random.Random(i * 3).choice(['fx-rates', 'ledger-snapshot', 'dunning-reminders', 'usage-rollup'])}   {random.Random(i * 11).choice(['Created job', 'Saw completed job', 'Deleted job', 'Missed scheduled time to start a job: 2026-12-0' + str(i % 7 + 1) + 'T05:00:00Z'])}"
                        for i in range(75)
                    ),
                    1,
                    3.2,
                ),
            ),
        ),
        U(
            "Greta tallied it: we've handed out about €1,870 in goodwill credits for the duplicates so far."
        ),
        A(
            "Noted. Checking the rest of the repo history for the migration commit, for the incident note.",
            Call(
                "shell",
                _sh(
                    "git log --since=2026-10-01 --format='%h %ad %an %s' --date=short | head -150",
                    _CRON_DIR,
                ),
                _codex_json(
                    _git_log(
                        2410,
                        140,
                        ["olu.adeyemi", "greta.h", "m.schulz", "ines.p", "renovate[bot]", "kai.w"],
                        [
                            "Move {n} more jobs to k8s CronJobs",
                            "fx-rates: retry ECB timeout",
                            "Bump psycopg to 3.2.{n}",
                            "ledger-snapshot: stream rows",
                            "Merge pull request #{n} from billing/jobs-k8s",
                            "Add reminder level 3 template",
                            "usage-rollup: index on day",
                        ],
                        {
                            0.78: "e53a0b2 2026-11-07 m.schulz           Move dunning-reminders to a k8s CronJob (VM cron to be removed later)"
                        },
                    )
                ),
            ),
        ),
        A(
            "Incident summary: since e53a0b2 (Nov 7) reminders ran twice, from the k8s CronJob and from /etc/cron.d/dunning on batch-02 (now disabled). The job now takes a Postgres advisory lock over a direct connection (dunning/lock.py), skips invoices already reminded today, and the CronJob runs at 07:15 Europe/Berlin with Forbid and startingDeadlineSeconds 200."
        ),
    ],
    [
        Fact("person", ("Olu", "billing"), "billing tech lead"),
        Fact("person", ("Greta", "support"), "support tallying tickets"),
        Fact("tool_output", ("2318",), "duplicates on one day, mid-table"),
        Fact("tool_output", ("CRON[41877]",), "legacy cron run on batch-02"),
        Fact("conclusion", ("batch-02", "cron.d"), "second scheduler is the VM crontab"),
        Fact("constraint", ("one reminder per invoice",), "finance rule"),
        Fact("decision", ("advisory lock", "expire"), "Postgres lock over Redis and why"),
        Fact("path", ("dunning/lock.py",), "lock helper added"),
        Fact("tool_output", ("test_second_runner_skips_when_lock_held",), "failing test"),
        Fact("conclusion", ("PgBouncer", "transaction"), "why the lock test failed"),
        Fact("number", ("07:15",), "schedule, the corrected value"),
        Fact("path", ("dunning-reminders.yaml",), "CronJob edited"),
        Fact("number", ("startingDeadlineSeconds", "200"), "deadline, the later value"),
        Fact("number", ("1,870",), "goodwill credits, said in conversation"),
    ],
)


# -- h5: Go memory leak ------------------------------------------------------------------------

_GO_DIR = "/src/ingest-gateway"


_GW_ERRORS = [
    'level=error msg="forward failed" tenant={t} err="Post \\"https://collector.eu.ingest.internal/v1/batch\\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"',
    'level=error msg="forward failed" tenant={t} err="upstream returned 503 Service Unavailable" attempt={a}',
    'level=warn msg="batch rejected by schema" tenant={t} err="schema: field \\"ts\\" is not RFC3339"',
    'level=error msg="kafka write failed" err="kafka.(*Writer).WriteMessages: context canceled" partition={a}',
    'level=error msg="jwks refresh failed" err="Get \\"https://auth.ingest.internal/.well-known/jwks.json\\": dial tcp 10.61.4.{a}:443: connect: connection refused"',
    'level=warn msg="tenant lookup slow" tenant={t} took={a}00ms',
    'level=error msg="http: TLS handshake error from 10.61.9.{a}:51644: EOF"',
    'level=error msg="forward failed" tenant={t} err="read tcp 10.61.2.{a}:40112->10.70.0.5:443: read: connection reset by peer"',
]


def _gw_log(seed: int, count: int) -> str:
    rng = random.Random(seed)
    lines = []
    for i in range(count):
        ts = (
            f"2026-12-07T09:{i * 40 // count:02d}:{rng.randint(0, 59):02d}.{rng.randint(100, 999)}Z"
        )
        if rng.random() < 0.55:
            lines.append(
                f'ts={ts} level=info msg="batch forwarded" tenant=t-{rng.randint(100, 999)} events={rng.randint(1, 500)} bytes={rng.randint(1000, 900000)} took={rng.randint(3, 400)}ms'
            )
        else:
            line = rng.choice(_GW_ERRORS).format(
                t=f"t-{rng.randint(100, 999)}", a=rng.randint(1, 9)
            )
            lines.append(f"ts={ts} {line}")
    return "\n".join(lines)


def _pprof_top(seed: int, count: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    funcs = [
        "encoding/json.(*decodeState).object",
        "bytes.growSlice",
        "compress/gzip.NewReader",
        "github.com/klauspost/compress/zstd.(*Decoder).DecodeAll",
        "google.golang.org/protobuf/proto.UnmarshalOptions.unmarshal",
        "github.com/prometheus/client_golang/prometheus.(*histogram).Observe",
        "net/textproto.(*Reader).ReadMIMEHeader",
        "go.uber.org/zap/zapcore.(*jsonEncoder).AppendString",
        "ingest-gateway/internal/schema.(*Validator).Validate",
        "ingest-gateway/internal/batch.(*Accumulator).Add",
        "runtime.malg",
        "strings.(*Builder).grow",
    ]
    lines = [
        "File: ingest-gateway",
        "Type: inuse_space",
        "Time: Dec 7, 2026 at 9:41am (UTC)",
        "Showing nodes accounting for 1.71GB, 96.40% of 1.77GB total",
        "Dropped 412 nodes (cum <= 8.86MB)",
        "      flat  flat%   sum%        cum   cum%",
    ]
    for _ in range(count):
        flat = rng.uniform(0.5, 60)
        lines.append(
            f"  {flat:8.2f}MB {flat / 17.7:5.2f}% {rng.uniform(10, 96):6.2f}%  {flat * rng.uniform(1, 4):8.2f}MB {rng.uniform(0.1, 30):5.2f}%  {rng.choice(funcs)}"
        )
    return _bury(lines, planted)


def _goroutines(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    stacks = [
        ("runtime.gopark", "net/http.(*conn).serve", "net/http/server.go:2092"),
        ("runtime.gopark", "github.com/segmentio/kafka-go.(*Writer).produce", "writer.go:611"),
        (
            "runtime.selectgo",
            "ingest-gateway/internal/batch.(*Accumulator).loop",
            "accumulator.go:88",
        ),
        (
            "runtime.gopark",
            "google.golang.org/grpc.(*addrConn).resetTransport",
            "clientconn.go:1220",
        ),
        ("sync.runtime_notifyListWait", "ingest-gateway/internal/queue.(*Ring).Pop", "ring.go:54"),
    ]
    lines = ["goroutine profile: total 184233"]
    for _ in range(70):
        a, b, where = rng.choice(stacks)
        lines.append(
            f"{rng.randint(1, 40)} @ 0x{_hex(rng, 6)} 0x{_hex(rng, 6)} 0x{_hex(rng, 6)} 0x{_hex(rng, 6)}"
        )
        lines.append(
            f"#\t0x{_hex(rng, 6)}\t{a}+0x{_hex(rng, 2)}\t/usr/local/go/src/runtime/proc.go:{rng.randint(380, 440)}"
        )
        lines.append(f"#\t0x{_hex(rng, 6)}\t{b}+0x{_hex(rng, 3)}\t{where}")
        lines.append("")
    return _bury(lines, planted)


def _go_source(seed: int, count: int, pkg: str) -> str:
    rng = random.Random(seed)
    nouns = ["event", "batch", "tenant", "schema", "payload", "route", "token", "shard"]
    lines = [f"package {pkg}", "", 'import (\n\t"context"\n\t"fmt"\n\t"time"\n)', ""]
    for i in range(count):
        a = rng.choice(nouns)
        cap = a[0].upper() + a[1:]
        lines += [
            f"func normalize{cap}{i}(ctx context.Context, in *{cap}) (*{cap}, error) {{",
            "\tif in == nil {",
            f'\t\treturn nil, fmt.Errorf("{pkg}: nil {a} %d", {i})',
            "\t}",
            f"\tin.ReceivedAt = time.Now().Add(-{rng.randint(1, 90)} * time.Millisecond)",
            "\treturn in, ctx.Err()",
            "}",
            "",
        ]
    return "\n".join(lines)


_FORWARDER = """package forward

import (
\t"bytes"
\t"context"
\t"net/http"
\t"time"
)

type Forwarder struct {
\tendpoint string
\tretries  int
}

func (f *Forwarder) client() *http.Client {
\treturn &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
}

func (f *Forwarder) sendWithRetry(ctx context.Context, body []byte) error {
\tvar lastErr error
\tfor attempt := 0; attempt <= f.retries; attempt++ {
\t\treq, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.endpoint, bytes.NewReader(body))
\t\tresp, err := f.client().Do(req)
\t\tif err != nil {
\t\t\tlastErr = err
\t\t\tcontinue
\t\t}
\t\tif resp.StatusCode >= 500 {
\t\t\tlastErr = &StatusError{Code: resp.StatusCode}
\t\t\tcontinue
\t\t}
\t\treturn resp.Body.Close()
\t}
\treturn lastErr
}
"""


def _go_test(seed: int, planted: dict[float, str], tail: str) -> str:
    rng = random.Random(seed)
    pkgs = [
        "internal/batch",
        "internal/schema",
        "internal/queue",
        "internal/auth",
        "internal/tenant",
        "cmd/gateway",
    ]
    lines = []
    for _ in range(160):
        lines.append(
            f"=== RUN   Test{rng.choice(['Accumulator', 'Validator', 'Ring', 'Token', 'Tenant', 'Route'])}{rng.choice(['Flush', 'Reject', 'Wrap', 'Expire', 'Parse', 'Limit'])}/{rng.choice(['empty', 'full', 'nested', 'unicode', 'large'])}"
        )
        lines.append(
            f"--- PASS: {rng.choice(['TestAccumulatorFlush', 'TestValidatorReject', 'TestRingWrap'])} (0.{rng.randint(0, 99):02d}s)"
        )
    body = _bury(lines, planted)
    oks = "\n".join(f"ok  \tingest-gateway/{p}\t{rng.uniform(0.1, 4):.3f}s" for p in pkgs)
    return body + "\n" + oks + "\n" + tail


H5 = Session(
    "h5-go-leak",
    [
        U(
            f"ingest-gateway pods get OOM-killed every 6-7 hours since last week. Wen Li leads SRE for the ingest path and is watching the rollout; she wants a canary before anything goes fleet-wide. Code in {_GO_DIR}."
        ),
        A(
            "Pulling heap and goroutine profiles from a pod that has been up a few hours, plus the pod events and recent logs.",
            Call(
                "Bash",
                {
                    "command": "kubectl -n ingest get events --field-selector reason=OOMKilling,reason=BackOff -o wide | tail -n 30 && kubectl -n ingest logs ingest-gateway-6f9c8d7b5-q8wzt --since=40m | tail -n 150",
                    "description": "OOM events and gateway logs",
                },
                "\n".join(
                    f"{random.Random(2511 + i).randint(2, 59)}m  Warning  {random.Random(i).choice(['OOMKilling', 'BackOff'])}  pod/ingest-gateway-6f9c8d7b5-{_hex(random.Random(i * 13), 5)}  {random.Random(i * 5).choice(['Memory cgroup out of memory: Killed process 1 (gateway) total-vm:3120448kB, anon-rss:2093120kB', 'Back-off restarting failed container gateway in pod'])}"
                    for i in range(24)
                )
                + "\n"
                + _gw_log(2512, 140),
            ),
            Call(
                "Bash",
                {
                    "command": "kubectl -n ingest port-forward pod/ingest-gateway-6f9c8d7b5-q8wzt 6060:6060 & sleep 2; go tool pprof -top -inuse_space http://127.0.0.1:6060/debug/pprof/heap | head -120",
                    "description": "Heap profile top",
                },
                _pprof_top(
                    2501,
                    130,
                    {
                        0.41: "  412.61MB 23.31% 61.02%   688.40MB 38.89%  net/http.(*persistConn).readLoop\n  198.02MB 11.19% 72.21%   198.02MB 11.19%  bufio.NewReaderSize (inline)\n  141.77MB  8.01% 80.22%   141.77MB  8.01%  bufio.NewWriterSize (inline)"
                    },
                ),
            ),
            Call(
                "Bash",
                {
                    "command": "curl -s 'http://127.0.0.1:6060/debug/pprof/goroutine?debug=1' | head -300",
                    "description": "Goroutine profile",
                },
                _goroutines(
                    2502,
                    {
                        0.5: "91877 @ 0x43e5ce 0x4372b7 0x46b9c5 0x4d2f47\n#\t0x46b9c4\tinternal/poll.runtime_pollWait+0x84\t/usr/local/go/src/runtime/netpoll.go:351\n#\t0x6f1d2a\tnet/http.(*persistConn).readLoop+0x1ea\t/usr/local/go/src/net/http/transport.go:2277\n\n91877 @ 0x43e5ce 0x44f1c5 0x6f3a9b\n#\t0x6f3a9a\tnet/http.(*persistConn).writeLoop+0xfa\t/usr/local/go/src/net/http/transport.go:2475\n"
                    },
                ),
            ),
        ),
        A(
            "Almost all goroutines are HTTP transport read/write loops: 91877 pairs of them. That points at connections that are never closed or reused. Reading the forwarder and searching for other Transports.",
            Call(
                "Read",
                {"file_path": f"{_GO_DIR}/internal/forward/forwarder.go"},
                _numbered(_FORWARDER + "\n" + _go_source(2503, 10, "forward").split("\n", 8)[8]),
            ),
            Call(
                "Grep",
                {
                    "pattern": "http\\.Transport|http\\.Client\\{",
                    "path": _GO_DIR,
                    "output_mode": "content",
                    "-n": True,
                },
                "internal/forward/forwarder.go:16:\treturn &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}\ninternal/auth/jwks.go:41:\tclient: &http.Client{Timeout: 5 * time.Second},\ninternal/tenant/lookup.go:27:var httpClient = &http.Client{Timeout: 2 * time.Second}\ncmd/gateway/main.go:88:\t\tTransport: otelhttp.NewTransport(http.DefaultTransport),\nvendor/github.com/segmentio/kafka-go/transport.go:102:type Transport struct {",
            ),
            Call(
                "Read",
                {"file_path": f"{_GO_DIR}/internal/batch/accumulator.go"},
                _numbered(_go_source(2504, 24, "batch")),
            ),
        ),
        A(
            "Two faults in sendWithRetry together explain the leak. Every attempt builds a new http.Client with its own Transport, so no connection is ever reused, and when the upstream answers 5xx the loop retries without closing resp.Body, so that connection's readLoop and writeLoop goroutines stay parked forever along with their buffers. Under the upstream's 503 bursts that's thousands of stranded connections per hour."
        ),
        U(
            "So how fast is it growing? Grafana shows RSS climbing about 140 MB per hour per pod, and the limit is 2Gi. Keep GOMEMLIMIT at 1800MiB by the way, it's 90% of the container limit and platform sets it fleet-wide."
        ),
        A(
            "That matches: 2Gi at 140 MB/hour is just over 6 hours from a fresh pod to OOM. I won't touch GOMEMLIMIT. The fix: one http.Client with one shared Transport per Forwarder, created in the constructor, because a Transport is the connection pool and a fresh one per request can never reuse a connection; and drain and close the body on every non-success path.",
            Call(
                "MultiEdit",
                {
                    "file_path": f"{_GO_DIR}/internal/forward/forwarder.go",
                    "edits": [
                        {
                            "old_string": "type Forwarder struct {\n\tendpoint string\n\tretries  int\n}\n\nfunc (f *Forwarder) client() *http.Client {\n\treturn &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}\n}",
                            "new_string": "type Forwarder struct {\n\tendpoint string\n\tretries  int\n\thttp     *http.Client\n}\n\nfunc New(endpoint string, retries int) *Forwarder {\n\tt := http.DefaultTransport.(*http.Transport).Clone()\n\tt.MaxIdleConnsPerHost = 100\n\treturn &Forwarder{endpoint: endpoint, retries: retries, http: &http.Client{Timeout: 10 * time.Second, Transport: t}}\n}",
                        },
                        {
                            "old_string": "\t\tresp, err := f.client().Do(req)",
                            "new_string": "\t\tresp, err := f.http.Do(req)",
                        },
                        {
                            "old_string": "\t\tif resp.StatusCode >= 500 {\n\t\t\tlastErr = &StatusError{Code: resp.StatusCode}\n\t\t\tcontinue\n\t\t}",
                            "new_string": "\t\tif resp.StatusCode >= 500 {\n\t\t\t// drain so the connection goes back to the pool, then close it\n\t\t\t_, _ = io.Copy(io.Discard, resp.Body)\n\t\t\t_ = resp.Body.Close()\n\t\t\tlastErr = &StatusError{Code: resp.StatusCode}\n\t\t\tcontinue\n\t\t}",
                        },
                    ],
                },
                f'Applied 3 edits to {_GO_DIR}/internal/forward/forwarder.go:\n1. Replaced "type Forwarder struct {{\\n\\tendpoint string\\n\\tretries  int\\n}}..." with "type Forwarder struct {{\\n\\tendpoint string\\n\\tretries  int\\n\\thttp  ..."\n2. Replaced "\\t\\tresp, err := f.client().Do(req)" with "\\t\\tresp, err := f.http.Do(req)"\n3. Replaced "\\t\\tif resp.StatusCode >= 500 {{\\n\\t\\t\\tlastErr = &StatusError{{Code..." with "\\t\\tif resp.StatusCode >= 500 {{\\n\\t\\t\\t// drain so the connection goes..."',
            ),
        ),
        U(
            "MaxIdleConnsPerHost 100 is too many: the upstream LB caps each client IP at 64 connections and we run 2 forwarders per pod. Make it 32."
        ),
        A(
            "Changing it to 32, and adding a leak test with goleak.",
            Call(
                "Edit",
                {
                    "file_path": f"{_GO_DIR}/internal/forward/forwarder.go",
                    "old_string": "\tt.MaxIdleConnsPerHost = 100",
                    "new_string": "\tt.MaxIdleConnsPerHost = 32 // 2 forwarders per pod under the LB's 64 per client IP",
                },
                _edited(
                    f"{_GO_DIR}/internal/forward/forwarder.go",
                    "func New(endpoint string, retries int) *Forwarder {\n\tt := http.DefaultTransport.(*http.Transport).Clone()\n\tt.MaxIdleConnsPerHost = 32 // 2 forwarders per pod under the LB's 64 per client IP",
                    17,
                ),
            ),
            Call(
                "Write",
                {
                    "file_path": f"{_GO_DIR}/internal/forward/forwarder_leak_test.go",
                    "content": 'package forward\n\nimport (\n\t"context"\n\t"net/http"\n\t"net/http/httptest"\n\t"testing"\n\n\t"go.uber.org/goleak"\n)\n\nfunc TestRetriesOn503DoNotLeakConnections(t *testing.T) {\n\tsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {\n\t\tw.WriteHeader(http.StatusServiceUnavailable)\n\t}))\n\tf := New(srv.URL, 3)\n\tfor i := 0; i < 200; i++ {\n\t\t_ = f.sendWithRetry(context.Background(), []byte(`{}`))\n\t}\n\tsrv.Close()\n\tf.http.CloseIdleConnections()\n\tgoleak.VerifyNone(t)\n}\n',
                },
                f"File created successfully at: {_GO_DIR}/internal/forward/forwarder_leak_test.go",
            ),
            Call(
                "Bash",
                {
                    "command": f"cd {_GO_DIR} && go test ./... 2>&1 | tail -n 360",
                    "description": "Run Go tests",
                },
                _go_test(
                    2505,
                    {
                        0.5: "=== RUN   TestRetriesOn503DoNotLeakConnections\n    forwarder_leak_test.go:22: found unexpected goroutines:\n        [Goroutine 88 in state IO wait, with internal/poll.runtime_pollWait on top of the stack:\n        internal/poll.runtime_pollWait(0x7f3c1a5e8e60, 0x72)\n        \t/usr/local/go/src/runtime/netpoll.go:351 +0x85\n        net/http.(*persistConn).readLoop(0xc0001b4120)\n        \t/usr/local/go/src/net/http/transport.go:2277 +0x1ea\n        created by net/http.(*Transport).dialConn in goroutine 71\n        \t/usr/local/go/src/net/http/transport.go:1944 +0x174e\n        ]\n--- FAIL: TestRetriesOn503DoNotLeakConnections (0.48s)"
                    },
                    "--- FAIL: TestRetriesOn503DoNotLeakConnections (0.48s)\nFAIL\nFAIL\tingest-gateway/internal/forward\t0.913s\nFAIL",
                ),
                True,
            ),
        ),
        A(
            "The remaining goroutine is the success path: `return resp.Body.Close()` closes without draining, so when the upstream sends a body the connection can't be reused and the test's last keep-alive connection is left open. Draining on success too.",
            Call(
                "Edit",
                {
                    "file_path": f"{_GO_DIR}/internal/forward/forwarder.go",
                    "old_string": "\t\treturn resp.Body.Close()",
                    "new_string": "\t\t_, _ = io.Copy(io.Discard, resp.Body)\n\t\treturn resp.Body.Close()",
                },
                _edited(
                    f"{_GO_DIR}/internal/forward/forwarder.go",
                    "\t\t_, _ = io.Copy(io.Discard, resp.Body)\n\t\treturn resp.Body.Close()",
                    41,
                ),
            ),
            Call(
                "Bash",
                {
                    "command": f"cd {_GO_DIR} && go test -race -count=1 ./internal/forward/ 2>&1 | tail -n 20 && go vet ./... 2>&1 | tail -n 40",
                    "description": "Forward package tests with race detector, vet",
                },
                "ok  \tingest-gateway/internal/forward\t2.311s\n# ingest-gateway/internal/tenant\ninternal/tenant/lookup.go:52:2: the cancel function returned by context.WithTimeout should be called, not discarded, to avoid a context leak\n# ingest-gateway/internal/auth\ninternal/auth/jwks.go:77:9: response body must be closed",
                True,
            ),
        ),
        A(
            "go vet also flags a discarded cancel in tenant/lookup.go and an unclosed body in auth/jwks.go. Both are low volume (JWKS refreshes hourly, tenant lookups are cached), so they aren't this leak; I'll fix them in a follow-up so this change stays reviewable.",
            Call(
                "Bash",
                {
                    "command": f"git -C {_GO_DIR} log --since=2026-11-01 --format='%h %ad %an %s' --date=short | head -140",
                    "description": "Recent commits",
                },
                _git_log(
                    2506,
                    130,
                    ["wen.li", "arjun.k", "sofia.m", "b.nakamura", "renovate[bot]", "d.ortiz"],
                    [
                        "forward: retry upstream 5xx up to {n} times",
                        "batch: flush on size or 250ms",
                        "Bump google.golang.org/grpc to v1.6{n}.0",
                        "schema: cache compiled validators",
                        "Merge pull request #{n} from ingest/tenant-cache",
                        "auth: rotate JWKS hourly",
                        "metrics: add forward_attempts_total",
                    ],
                    {
                        0.16: "a09f3d2 2026-11-26 arjun.k            forward: retry upstream 5xx up to 3 times"
                    },
                ),
            ),
        ),
        U(
            "Wen wants the canary at 10% for an hour. Update from her: make it 25% for two hours, 10% doesn't get enough 503 bursts to prove anything."
        ),
        A(
            "Setting the canary to 25% and watching goroutines and RSS.",
            Call(
                "Bash",
                {
                    "command": f"cd {_GO_DIR} && kubectl -n ingest argo rollouts set image ingest-gateway gateway=registry.ingest.internal/ingest-gateway:2026.12.07-leakfix && kubectl -n ingest argo rollouts promote ingest-gateway --step 25 && kubectl -n ingest top pods -l app=ingest-gateway",
                    "description": "Canary at 25% and pod memory",
                },
                "rollout \"ingest-gateway\" image updated\nrollout 'ingest-gateway' promoted\nNAME                                CPU(cores)   MEMORY(bytes)\n"
                + "\n".join(
                    f"ingest-gateway-{_hex(random.Random(2507 + i), 9)}-{_hex(random.Random(i), 5)}   {random.Random(i * 3).randint(200, 900)}m         {random.Random(i * 7).randint(600, 1900)}Mi"
                    for i in range(36)
                ),
            ),
        ),
        A(
            "Status: the leak was sendWithRetry creating a Transport per attempt and leaving 5xx response bodies open (since a09f3d2 added the retries). internal/forward/forwarder.go now has one pooled client with MaxIdleConnsPerHost 32 and drains every body; forwarder_leak_test.go proves it with goleak. GOMEMLIMIT stays 1800MiB, and the canary runs at 25% for two hours before Wen promotes it."
        ),
    ],
    [
        Fact("person", ("Wen", "SRE"), "SRE lead watching the rollout"),
        Fact("tool_output", ("184233",), "total goroutines"),
        Fact("tool_output", ("412.61MB",), "readLoop heap, mid-profile"),
        Fact("conclusion", ("resp.Body", "Transport"), "why it leaks"),
        Fact("number", ("140 MB",), "growth per hour, said in conversation"),
        Fact("constraint", ("GOMEMLIMIT", "1800MiB"), "memory limit stays"),
        Fact("decision", ("shared Transport", "reuse"), "one client per forwarder and why"),
        Fact("number", ("MaxIdleConnsPerHost", "32"), "pool size, the corrected value"),
        Fact("path", ("internal/forward/forwarder.go",), "forwarder edited"),
        Fact("path", ("forwarder_leak_test.go",), "leak test written"),
        Fact("tool_output", ("Goroutine 88",), "goleak failure"),
        Fact("tool_output", ("a09f3d2",), "commit that added retries, mid-log"),
        Fact("number", ("25%",), "canary share, the later value"),
    ],
)

SESSIONS = [H1, H2, H3, H4, H5]
