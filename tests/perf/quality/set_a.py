# ruff: noqa: E501  (scripted session data: long tool outputs read better unwrapped)
"""Set A: the scripted sessions the offline summarizer may be tuned on (per-fact results allowed)."""

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
        "a1-flask-upgrade",
        [
            U(
                "The CI is red after the dependency bump. Can you find out what broke in the web app?"
            ),
            A(
                chatter(1),
                Call(
                    "bash",
                    {"cmd": "pip show flask | head -3"},
                    "Name: Flask\nVersion: 3.0.3\nSummary: A simple framework for building complex web applications.",
                ),
            ),
            A(
                "Flask is on 3.0.3 now. Running the suite.",
                Call(
                    "bash",
                    {"cmd": "pytest -q"},
                    passing_tests(11, 40, "tests/test_views.py")
                    + "\nFAILED tests/test_auth.py::test_login_redirect - AssertionError: 302 != 303\n1 failed, 40 passed",
                ),
            ),
            A(
                "One failure: the login redirect now returns 303. Reading the view.",
                Call("read_file", {"path": "src/web/auth/views.py"}, source(12, 25)),
            ),
            U("Please don't edit the tests to make them pass; fix the code."),
            A(
                "Understood. Decision: we return 303 explicitly from login because Flask 3 changed the default for POST redirects.",
                Call(
                    "edit_file",
                    {
                        "path": "src/web/auth/views.py",
                        "old": "redirect(url)",
                        "new": "redirect(url, code=303)",
                    },
                    "edited src/web/auth/views.py (1 change)",
                ),
            ),
            A(
                chatter(2),
                Call("bash", {"cmd": "pytest -q"}, passing_tests(13, 41, "tests/test_views.py")),
            ),
            A("All 41 tests pass now. The only code change is in the auth view."),
            U("Good. What port does the dev server use? I need to point the proxy at it."),
            A(
                chatter(3),
                Call(
                    "read_file",
                    {"path": "config/dev.toml"},
                    '[server]\nhost = "127.0.0.1"\nport = 5057\ndebug = true\n\n[db]\nurl = "sqlite:///dev.db"\n',
                ),
            ),
            A("The dev server listens on port 5057 (config/dev.toml)."),
            U("Next, add a rate limit to the login endpoint. Keep it under 10 attempts a minute."),
            A(
                "I'll look at what rate limiting we already have.",
                Call("bash", {"cmd": "ls -l src/web"}, listing(14, 30, "src/web")),
            ),
            A("No limiter yet. I still need to add it to the login route; that is the next step."),
        ],
        [
            Fact("tool_output", ("3.0.3",), "Flask version printed by pip show"),
            Fact("tool_output", ("test_login_redirect",), "the failing test"),
            Fact("decision", ("303",), "return 303 explicitly"),
            Fact("constraint", ("tests", "fix the code"), "do not edit tests"),
            Fact("path", ("src/web/auth/views.py",), "file changed"),
            Fact("number", ("5057",), "dev server port"),
            Fact("constraint", ("10 attempts",), "rate limit under 10/minute"),
            Fact("path", ("config/dev.toml",), "config read"),
        ],
    ),
    Session(
        "a2-migration",
        [
            U("We need to add a `status` column to the orders table. Postgres, alembic."),
            A(
                "Checking the current migration head.",
                Call(
                    "bash",
                    {"cmd": "alembic current"},
                    "INFO  [alembic.runtime.migration] Context impl PostgresqlImpl.\n4f2a9c1e7b3d (head)",
                ),
            ),
            A(
                "Head is 4f2a9c1e7b3d. Counting rows to see how heavy a backfill would be.",
                Call(
                    "bash",
                    {"cmd": "psql -c 'select count(*) from orders'"},
                    " count  \n--------\n 1284417\n(1 row)",
                ),
            ),
            A("The orders table has 1284417 rows, so the backfill must be batched."),
            U("Never run the migration against prod from here. Only the local database."),
            A(
                "Noted. We'll use a server default of 'pending' instead of a backfill, because adding a column with a default is instant on Postgres 11+.",
                Call(
                    "write_file",
                    {"path": "migrations/versions/9b1d_add_order_status.py"},
                    "wrote migrations/versions/9b1d_add_order_status.py",
                ),
            ),
            A(
                chatter(4),
                Call(
                    "bash",
                    {"cmd": "alembic upgrade head"},
                    log(21, 30, "alembic")
                    + '\nERROR: column "status" of relation "orders" already exists',
                ),
            ),
            A(
                "The upgrade failed because a stale local schema already has the column. Resetting the local db."
            ),
            A(
                "Dropping and recreating the local db.",
                Call(
                    "bash",
                    {"cmd": "make db-reset && alembic upgrade head"},
                    "db reset\nINFO  Running upgrade 4f2a9c1e7b3d -> 9b1d, add order status",
                ),
            ),
            A("`make db-reset && alembic upgrade head` worked; the migration applies cleanly."),
            U("Great. Also the API docs need the new field. Do that after the model change."),
            A(
                "Reading the model.",
                Call("read_file", {"path": "app/models/order.py"}, source(22, 30)),
            ),
            A("Open: add `status` to app/models/order.py, then document it in the API docs."),
        ],
        [
            Fact("tool_output", ("4f2a9c1e7b3d",), "alembic head"),
            Fact("number", ("1284417",), "row count"),
            Fact("constraint", ("prod",), "never migrate prod"),
            Fact("decision", ("default", "instant"), "server default instead of backfill, why"),
            Fact("tool_output", ("already exists",), "migration error"),
            Fact("tool_output", ("make db-reset",), "command that worked"),
            Fact("path", ("app/models/order.py",), "next file"),
            Fact("path", ("9b1d_add_order_status.py",), "migration file"),
        ],
    ),
    Session(
        "a3-flaky-test",
        [
            U("tests/test_sync.py::test_parallel_upload is flaky on CI. Look into it, please."),
            A(
                "Running it in a loop locally.",
                Call(
                    "bash",
                    {"cmd": "pytest tests/test_sync.py -k parallel_upload --count 50"},
                    passing_tests(31, 30, "tests/test_sync.py")
                    + "\nFAILED tests/test_sync.py::test_parallel_upload - TimeoutError: upload did not finish in 2.0s\n3 failed, 47 passed",
                ),
            ),
            A(
                "It fails 3 of 50 runs with a TimeoutError after 2.0s. Reading the uploader.",
                Call("read_file", {"path": "sync/uploader.py"}, source(32, 30)),
            ),
            A(
                "The uploader opens a new HTTP session per chunk; with 8 workers that exhausts the pool."
            ),
            U("I prefer a fix in the uploader rather than a bigger timeout."),
            A(
                "Agreed. I went with one shared session per uploader because it reuses connections and stops the pool exhaustion.",
                Call(
                    "edit_file", {"path": "sync/uploader.py"}, "edited sync/uploader.py (3 changes)"
                ),
            ),
            A(
                chatter(5),
                Call(
                    "bash",
                    {"cmd": "pytest tests/test_sync.py -k parallel_upload --count 200"},
                    passing_tests(33, 40, "tests/test_sync.py") + "\n200 passed in 71.30s",
                ),
            ),
            A("200 of 200 runs pass now."),
            U("What's the pool size in the config?"),
            A(
                "Checking.",
                Call(
                    "bash",
                    {"cmd": "grep -n pool sync/settings.py"},
                    "14:HTTP_POOL_MAXSIZE = 16\n15:HTTP_POOL_BLOCK = False",
                ),
            ),
            A("HTTP_POOL_MAXSIZE is 16 in sync/settings.py."),
            U("Fine. Leave the CI workflow alone, the infra team owns it."),
            A("Will do. Remaining: add a regression note to CHANGELOG.md."),
        ],
        [
            Fact("tool_output", ("TimeoutError",), "the failure"),
            Fact("number", ("3", "50"), "flake rate"),
            Fact("decision", ("shared session", "reuses connections"), "decision and why"),
            Fact("constraint", ("bigger timeout",), "prefer no bigger timeout"),
            Fact("tool_output", ("16",), "pool size from grep"),
            Fact("constraint", ("CI workflow",), "leave CI alone"),
            Fact("path", ("sync/uploader.py",), "file changed"),
            Fact("path", ("CHANGELOG.md",), "open task file"),
        ],
    ),
    Session(
        "a4-docker",
        [
            U("The container build is slow. Can you speed up the Dockerfile?"),
            A(
                "Looking at the Dockerfile.",
                Call(
                    "read_file",
                    {"path": "docker/Dockerfile"},
                    "FROM python:3.11-slim\nCOPY . /app\nRUN pip install -r /app/requirements.txt\n"
                    + source(41, 10),
                ),
            ),
            A(
                "Timing a build.",
                Call(
                    "bash",
                    {"cmd": "docker build -t svc ."},
                    log(42, 25, "docker") + "\nSuccessfully built 7c2e1f0a\nbuild took 412s",
                ),
            ),
            A(
                "The build takes 412s because the COPY before pip install busts the layer cache on every change."
            ),
            U("Keep the base image on python:3.11-slim, security signed off on it."),
            A(
                "OK. Plan is to copy requirements.txt first and install, then copy the source, so the dependency layer is cached.",
                Call("edit_file", {"path": "docker/Dockerfile"}, "edited docker/Dockerfile"),
            ),
            A(
                chatter(6),
                Call(
                    "bash",
                    {"cmd": "docker build -t svc ."},
                    log(43, 25, "docker") + "\nbuild took 38s",
                ),
            ),
            A("A rebuild after a source change now takes 38s."),
            U("Which version of pip ends up in the image?"),
            A(
                "Checking.",
                Call(
                    "bash",
                    {"cmd": "docker run --rm svc pip --version"},
                    "pip 24.0 from /usr/local/lib/python3.11/site-packages/pip (python 3.11)",
                ),
            ),
            A("pip 24.0."),
            U("Thanks. Next, the image should run as a non-root user."),
            A("That's next: add a USER line to docker/Dockerfile and fix the file ownership."),
        ],
        [
            Fact("number", ("412",), "old build time"),
            Fact("number", ("38",), "new build time"),
            Fact("constraint", ("python:3.11-slim",), "base image fixed"),
            Fact("decision", ("requirements.txt", "cache"), "copy reqs first, why"),
            Fact("tool_output", ("24.0",), "pip version"),
            Fact("path", ("docker/Dockerfile",), "file changed"),
            Fact("constraint", ("non-root",), "open task"),
        ],
    ),
    Session(
        "a5-perf",
        [
            U("The /v1/search endpoint got slow. Profile it."),
            A(
                "Profiling.",
                Call(
                    "bash",
                    {"cmd": "py-spy record -d 10 -o prof.svg --pid 4411"},
                    "py-spy> Sampling process 100 times a second for 10 seconds\npy-spy> Wrote flamegraph data to 'prof.svg'. Samples: 1000 Errors: 0",
                ),
            ),
            A(
                "Reading the handler.",
                Call("read_file", {"path": "api/search/handler.py"}, source(51, 35)),
            ),
            A("Most samples are in `rank_results`, which re-sorts the full list per page."),
            A(
                "Measuring.",
                Call("bash", {"cmd": "python bench/search.py"}, "p50 340ms  p95 910ms  n=500"),
            ),
            A("Baseline: p50 340ms, p95 910ms."),
            U("Don't add a new dependency for this; no numpy."),
            A(
                "Fine. We'll sort once with heapq.nlargest since only the top 20 are ever shown.",
                Call(
                    "edit_file", {"path": "api/search/handler.py"}, "edited api/search/handler.py"
                ),
            ),
            A(
                "Measuring again.",
                Call("bash", {"cmd": "python bench/search.py"}, "p50 41ms  p95 120ms  n=500"),
            ),
            A("Now p50 41ms, p95 120ms."),
            U(
                "Nice. Remember that the search index is rebuilt nightly at 02:30 UTC; don't schedule anything then."
            ),
            A("Noted. Still to do: a unit test for the top-20 cut in tests/test_search.py."),
        ],
        [
            Fact("number", ("340",), "baseline p50"),
            Fact("number", ("41",), "new p50"),
            Fact("constraint", ("numpy",), "no new dependency"),
            Fact("decision", ("heapq", "top 20"), "heapq and why"),
            Fact("path", ("api/search/handler.py",), "file changed"),
            Fact("constraint", ("02:30",), "nightly rebuild"),
            Fact("path", ("tests/test_search.py",), "open task"),
            Fact("tool_output", ("rank_results",), "hot function"),
        ],
    ),
    Session(
        "a6-release",
        [
            U("Cut release 2.4.0 of the CLI. Check the changelog and the version first."),
            A(
                "Current version:",
                Call("bash", {"cmd": "grep version pyproject.toml"}, 'version = "2.3.7"'),
            ),
            A(
                "pyproject says 2.3.7.",
                Call(
                    "read_file",
                    {"path": "CHANGELOG.md"},
                    "## Unreleased\n- faster startup\n- fix --json output\n" + source(61, 8),
                ),
            ),
            U("Always tag releases as signed tags, never lightweight ones."),
            A(
                "Understood.",
                Call(
                    "bash",
                    {"cmd": "python -m build"},
                    log(62, 30, "build")
                    + "\nSuccessfully built cli-2.4.0.tar.gz and cli-2.4.0-py3-none-any.whl",
                ),
            ),
            A(
                "Built both artefacts.",
                Call(
                    "bash",
                    {"cmd": "twine check dist/*"},
                    "Checking dist/cli-2.4.0-py3-none-any.whl: PASSED\nChecking dist/cli-2.4.0.tar.gz: FAILED\nERROR `long_description` has syntax errors in markup",
                ),
            ),
            A("The sdist fails twine check: the README has a markup error."),
            A(
                "Decided to switch the long_description content type to text/markdown, since the README is Markdown and was declared as rst.",
                Call("edit_file", {"path": "pyproject.toml"}, "edited pyproject.toml"),
            ),
            A(
                "Checking again.",
                Call("bash", {"cmd": "python -m build && twine check dist/*"}, "PASSED\nPASSED"),
            ),
            A("Both pass. Remaining: push the signed tag v2.4.0 and upload."),
        ],
        [
            Fact("tool_output", ("2.3.7",), "old version"),
            Fact("constraint", ("signed",), "signed tags"),
            Fact("tool_output", ("long_description",), "twine error"),
            Fact("decision", ("text/markdown",), "content type"),
            Fact("path", ("pyproject.toml",), "file changed"),
            Fact("number", ("2.4.0",), "release number"),
        ],
    ),
]

# Added while tuning (same rules: tuning set). New shapes: Codex-style shell calls with argv lists
# and patches, facts that only a tool printed (never restated), decisions and constraints in other
# words, an error buried in a long log, a summary of many small steps.
SESSIONS += [
    Session(
        "a7-node-service",
        [
            U("The health check on the node service returns 503 locally. Can you dig in?"),
            A(
                "Checking the toolchain first.",
                Call("shell", {"command": ["bash", "-lc", "node --version"]}, "v20.11.1"),
            ),
            A(
                chatter(71),
                Call(
                    "shell",
                    {"command": ["bash", "-lc", "cat .env.example"]},
                    "NODE_ENV=development\nDATABASE_URL=postgres://app@localhost:6543/app\nLOG_LEVEL=info",
                ),
            ),
            A(
                chatter(72),
                Call(
                    "shell",
                    {"command": ["bash", "-lc", "curl -s localhost:3000/health"]},
                    '{"status":"down","db":"ECONNREFUSED 127.0.0.1:6543"}',
                ),
            ),
            U("I'd rather not run a database in docker for this; use the shared dev instance."),
            A(
                "In that case the service must read DATABASE_URL from the environment, which it ignores today.",
                Call(
                    "apply_patch",
                    {
                        "input": "*** Begin Patch\n*** Update File: src/db/pool.ts\n@@\n-const url = 'postgres://localhost/app'\n+const url = process.env.DATABASE_URL\n*** End Patch"
                    },
                    "Success. Updated the following files:\nM src/db/pool.ts",
                ),
            ),
            A(
                chatter(73),
                Call(
                    "shell",
                    {"command": ["bash", "-lc", "npm test"]},
                    log(74, 40, "jest") + "\nTests:       212 passed, 212 total",
                ),
            ),
            U("Hands off package.json, the platform team pins those versions."),
            A(
                "Okay. For the pool size we'll go with 10 connections since the shared instance caps each client at 20.",
            ),
            A("Left to do: document DATABASE_URL in docs/setup.md."),
        ],
        [
            Fact("tool_output", ("20.11.1",), "node version, only in tool output"),
            Fact("tool_output", ("ECONNREFUSED",), "health error, only in tool output"),
            Fact("number", ("6543",), "db port from the env file"),
            Fact("constraint", ("docker",), "no local db in docker"),
            Fact("constraint", ("package.json",), "hands off package.json"),
            Fact("decision", ("10 connections", "caps"), "pool size and why"),
            Fact("path", ("src/db/pool.ts",), "file patched"),
            Fact("path", ("docs/setup.md",), "open task file"),
            Fact("number", ("212",), "test count"),
        ],
    ),
    Session(
        "a8-data-import",
        [
            U("Import the March export into the analytics db and tell me how many rows landed."),
            A(
                chatter(81),
                Call("bash", {"cmd": "wc -l exports/march.csv"}, "  88412 exports/march.csv"),
            ),
            A(
                chatter(82),
                Call(
                    "bash",
                    {"cmd": "python scripts/load.py exports/march.csv"},
                    log(83, 45, "loader")
                    + "\nWARNING skipped 37 rows with an empty customer_id"
                    + "\n"
                    + log(84, 10, "loader")
                    + "\nloaded 88374 rows into analytics.events",
                ),
            ),
            U(
                "Skipping is fine, but write the skipped ids somewhere. And do not truncate the events table, ever."
            ),
            A(
                "Sure. The loader now writes them to a sidecar file, since the warning alone loses the ids.",
                Call(
                    "edit_file", {"path": "scripts/load.py"}, "edited scripts/load.py (2 changes)"
                ),
            ),
            A(
                chatter(85),
                Call(
                    "bash",
                    {"cmd": "psql analytics -c 'select max(ts) from events'"},
                    "          max\n------------------------\n 2024-03-31 23:59:58+00\n(1 row)",
                ),
            ),
            A(
                chatter(86),
                Call(
                    "bash",
                    {"cmd": "python scripts/load.py exports/april.csv"},
                    "Traceback (most recent call last):\n  File \"scripts/load.py\", line 88, in <module>\nUnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 in position 4121",
                    True,
                ),
            ),
            A(
                "April is another encoding; that one waits until the user says which charset to assume."
            ),
        ],
        [
            Fact("number", ("88412",), "line count from wc"),
            Fact("tool_output", ("88374",), "rows loaded, only in tool output"),
            Fact("tool_output", ("37 rows",), "skipped rows warning in a long log"),
            Fact("constraint", ("truncate",), "never truncate events"),
            Fact("decision", ("sidecar",), "write skipped ids to a sidecar file"),
            Fact("tool_output", ("2024-03-31",), "latest timestamp"),
            Fact("tool_output", ("UnicodeDecodeError",), "april failure"),
            Fact("path", ("scripts/load.py",), "file changed"),
        ],
    ),
]

# Added after the first (and only aggregate) look at set B: more ways users state limits and more
# places numbers hide, written without knowing B's wording.
SESSIONS += [
    Session(
        "a9-api-client",
        [
            U(
                "Our Python client for the billing API times out on large invoices. We can't change the public API of the client, people pin it."
            ),
            A(
                chatter(91),
                Call(
                    "bash",
                    {"cmd": "grep -rn 'timeout' billing_client/"},
                    "billing_client/http.py:12:DEFAULT_TIMEOUT = 5\nbilling_client/http.py:40:    resp = session.get(url, timeout=DEFAULT_TIMEOUT)",
                ),
            ),
            A(
                chatter(92),
                Call(
                    "bash",
                    {"cmd": "python scripts/fetch_invoice.py INV-2291 --verbose"},
                    log(93, 30, "client")
                    + "\nrequest took 7.8s; payload 14.2 MB; server returned 200",
                ),
            ),
            U("Could you avoid touching the retry logic? It's shared with the payments team."),
            A(
                "The large invoice takes 7.8s, past the 5 second default. I'll raise the default to 30 seconds and make it a keyword argument, so existing callers keep working.",
                Call(
                    "edit_file", {"path": "billing_client/http.py"}, "edited billing_client/http.py"
                ),
            ),
            U("Use only the standard library for any new code here."),
            A(
                chatter(94),
                Call(
                    "bash",
                    {"cmd": "pytest tests/client -q"},
                    passing_tests(95, 30, "tests/client/test_http.py"),
                ),
            ),
            A("All 30 client tests pass."),
            U("Ship it in 1.8.1. The changelog lives in docs/changes.rst."),
        ],
        [
            Fact("constraint", ("public API",), "cannot change the public API"),
            Fact("constraint", ("retry",), "do not touch the retry logic (asked as a question)"),
            Fact("constraint", ("standard library",), "stdlib only"),
            Fact("tool_output", ("DEFAULT_TIMEOUT = 5",), "the old default, from grep"),
            Fact("number", ("7.8",), "how long the large invoice took"),
            Fact("decision", ("30 seconds", "keyword"), "raise default, as a keyword argument"),
            Fact("path", ("billing_client/http.py",), "file changed"),
            Fact("number", ("1.8.1",), "release number"),
            Fact("path", ("docs/changes.rst",), "changelog path"),
        ],
    ),
    Session(
        "a10-disk-alert",
        [
            U(
                "The disk alert fired on build-03 again. The threshold is 85 percent, and it has to stay at that."
            ),
            A(
                chatter(101),
                Call(
                    "bash",
                    {"cmd": "ssh build-03 df -h /var"},
                    "Filesystem      Size  Used Avail Use% Mounted on\n/dev/nvme0n1p3  200G  178G   22G  89% /var",
                ),
            ),
            A(
                chatter(102),
                Call(
                    "bash",
                    {"cmd": "ssh build-03 du -sh /var/lib/docker /var/log /var/cache/ci"},
                    "131G\t/var/lib/docker\n9.1G\t/var/log\n33G\t/var/cache/ci",
                ),
            ),
            A(
                "Docker images take most of it. Pruning dangling images first.",
                Call(
                    "bash",
                    {"cmd": "ssh build-03 docker image prune -f"},
                    "Deleted Images:\n"
                    + "\n".join(f"deleted: sha256:{i:064x}" for i in range(40))
                    + "\nTotal reclaimed space: 61.3GB",
                ),
            ),
            U("Stay away from /var/cache/ci, the runners depend on it being warm."),
            A(
                chatter(103),
                Call(
                    "bash",
                    {"cmd": "ssh build-03 df -h /var"},
                    "Filesystem      Size  Used Avail Use% Mounted on\n/dev/nvme0n1p3  200G  117G   83G  59% /var",
                ),
            ),
            A(
                "Usage is down from 89% to 59%. To stop it coming back we'll add a weekly prune timer instead of pruning by hand, because the alert has fired three times this month."
            ),
            A("Pending: write the systemd timer in ops/timers/docker-prune.timer."),
        ],
        [
            Fact("constraint", ("85",), "alert threshold stays at 85"),
            Fact("tool_output", ("89%",), "usage before, from df"),
            Fact("tool_output", ("61.3GB",), "space reclaimed, at the end of a long output"),
            Fact("constraint", ("/var/cache/ci",), "stay away from the CI cache"),
            Fact("number", ("59%",), "usage after"),
            Fact("decision", ("weekly", "three times"), "weekly prune timer, and why"),
            Fact("path", ("ops/timers/docker-prune.timer",), "open task file"),
        ],
    ),
]
