# ruff: noqa: E501  (scripted session data: long tool outputs read better unwrapped)
"""Set C: a larger held-out set (4 domains, 64 facts), in shapes sets A and B lack: long tool
outputs with the fact in their middle, several files and calls per turn, Claude Code's and
Codex's own tool shapes, a fact restated then corrected, a value later superseded, conclusions
stated in replies, people named with their role. Written and committed before the offline
summarizer was tuned on set A; while tuning only its totals are read, never which facts it lost.
For a corrected or superseded fact the needle is the final value.
"""

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


def _pip_show(name: str, version: str, requires: str) -> str:
    return (
        f"Name: {name}\nVersion: {version}\nSummary: Python bindings for the {name} API\n"
        f"Home-page: https://example.invalid/{name}\nAuthor: {name} maintainers\nLicense: MIT\n"
        f"Location: /srv/app/.venv/lib/python3.11/site-packages\nRequires: {requires}\nRequired-by: app"
    )


def _settings(seed: int, planted: str) -> str:
    body = source(seed, 8).splitlines()
    middle = len(body) // 2
    return "\n".join(body[:middle] + planted.splitlines() + body[middle:])


def _codex(output: str, code: int = 0) -> str:
    """A Codex shell result as the importer stores it: its JSON with the exit status."""
    import json

    return json.dumps({"output": output, "metadata": {"exit_code": code, "duration_seconds": 1.2}})


SESSIONS = [
    # -- payments webhooks, Claude Code tool shapes -----------------------------------------------
    Session(
        "c1-webhooks",
        [
            U(
                "Webhook signature checks started failing in production this morning. Priya from the payments team owns the webhook secret rotation, so loop her in if we need a new secret."
            ),
            A(
                "Checking the library version and the settings together.",
                Call(
                    "Bash",
                    {"command": "pip show stripe", "description": "Show stripe package"},
                    _pip_show("stripe", "7.10.0", "requests, typing-extensions"),
                ),
                Call(
                    "Read",
                    {"file_path": "/srv/app/config/settings/prod.py"},
                    _settings(
                        301,
                        "WEBHOOK_TOLERANCE_SECONDS = 300\nWEBHOOK_SECRET_ENV = 'STRIPE_WEBHOOK_SECRET_V1'",
                    ),
                ),
                Call("Bash", {"command": "git describe --tags"}, "v2.14.3-8-ga91c3e7"),
            ),
            A(
                "The endpoint secret comes from STRIPE_WEBHOOK_SECRET_V1 according to the settings.",
                Call(
                    "Bash",
                    {
                        "command": "kubectl logs deploy/payments-api --since=2h | grep -i signature | tail -n 40"
                    },
                    log(302, 35, "payments-api")
                    + "\n2024-05-14T07:12:09Z ERROR payments-api stripe.error.SignatureVerificationError: No signatures found matching the expected signature for payload\n"
                    + log(303, 5, "payments-api"),
                ),
            ),
            A(
                "Correction: the deployed env var is STRIPE_WHSEC_LIVE, not STRIPE_WEBHOOK_SECRET_V1; the settings file is stale for that key.",
                Call(
                    "Bash",
                    {
                        "command": "kubectl get deploy payments-api -o jsonpath='{.spec.template.spec.containers[0].env[*].name}'"
                    },
                    "DATABASE_URL STRIPE_API_KEY STRIPE_WHSEC_LIVE SENTRY_DSN",
                ),
            ),
            U("Don't log the full payload while debugging, it contains card fingerprints."),
            A(
                "Root cause: nginx in front of the service re-compresses the request body, so the bytes we verify differ from the bytes Stripe signed.",
                Call(
                    "Read",
                    {"file_path": "/srv/app/deploy/nginx/payments.conf"},
                    "server {\n  listen 8443 ssl;\n  gzip on;\n  gunzip on;\n  location /webhooks/ {\n    proxy_pass http://payments-api:8000;\n  }\n}",
                ),
            ),
            A(
                "I'll verify against the raw request body instead of the parsed JSON, because re-serialising the JSON changes whitespace and breaks the signature.",
                Call(
                    "Edit",
                    {
                        "file_path": "/srv/app/payments/webhooks.py",
                        "old_string": "payload = json.dumps(request.json)",
                        "new_string": "payload = request.get_data()",
                    },
                    "The file /srv/app/payments/webhooks.py has been updated.",
                ),
                Call(
                    "MultiEdit",
                    {
                        "file_path": "/srv/app/payments/tests/test_webhooks.py",
                        "edits": [
                            {"old_string": "a", "new_string": "b"},
                            {"old_string": "c", "new_string": "d"},
                        ],
                    },
                    "Applied 2 edits to /srv/app/payments/tests/test_webhooks.py",
                ),
                Call(
                    "Edit",
                    {
                        "file_path": "/srv/app/deploy/nginx/payments.conf",
                        "old_string": "gunzip on;",
                        "new_string": "gunzip off;",
                    },
                    "The file /srv/app/deploy/nginx/payments.conf has been updated.",
                ),
            ),
            A(
                chatter(31),
                Call(
                    "Bash",
                    {"command": "pytest payments -q"},
                    passing_tests(304, 118, "payments/tests/test_webhooks.py"),
                ),
            ),
            A(
                "118 tests pass. Adding tests for the raw-body path.",
                Call(
                    "Write",
                    {
                        "file_path": "/srv/app/payments/tests/test_raw_body.py",
                        "content": "def test_raw():\n    ...",
                    },
                    "File created successfully at: /srv/app/payments/tests/test_raw_body.py",
                ),
                Call(
                    "Bash",
                    {"command": "pytest payments -q"},
                    passing_tests(305, 124, "payments/tests/test_raw_body.py"),
                ),
            ),
            A("Now 124 tests pass, including the six new raw-body cases."),
            U("What's the test timeout in CI?"),
            A(
                "Reading the pytest config.",
                Call(
                    "Read",
                    {"file_path": "/srv/app/pytest.ini"},
                    "[pytest]\naddopts = -q --strict-markers\ntestpaths = payments tests\ntimeout = 45\nmarkers =\n    slow: long tests\n    stripe: hits the stripe mock",
                ),
            ),
            A("The CI test timeout is 45 seconds per test (pytest.ini)."),
            U(
                "ok. 37 webhook events failed during the outage, we still need to replay them from the dashboard once this is deployed."
            ),
        ],
        [
            Fact("person", ("Priya", "payments"), "person with role"),
            Fact("tool_output", ("7.10.0",), "stripe version from pip show"),
            Fact("tool_output", ("300",), "tolerance read from settings file"),
            Fact("tool_output", ("v2.14.3",), "release tag from git describe"),
            Fact("tool_output", ("No signatures found matching",), "error from logs"),
            Fact("number", ("STRIPE_WHSEC_LIVE",), "corrected env var"),
            Fact("constraint", ("card fingerprint",), "don't log payloads"),
            Fact("conclusion", ("nginx", "body"), "root cause concluded in a reply"),
            Fact("decision", ("raw", "whitespace"), "raw body, and why"),
            Fact("path", ("payments/webhooks.py",), "file edited"),
            Fact("path", ("test_raw_body.py",), "file written"),
            Fact("path", ("payments.conf",), "nginx config edited"),
            Fact("number", ("124",), "test count, superseding 118"),
            Fact("tool_output", ("45",), "CI timeout from pytest.ini"),
            Fact("number", ("37",), "failed events to replay"),
            Fact("conclusion", ("replay",), "open task: replay events"),
        ],
    ),
    # -- Kubernetes rollout, Codex tool shapes ------------------------------------------------------
    Session(
        "c2-rollout",
        [
            U(
                "The canary for search-api is stuck at 0/3 ready. Marek is the SRE on call tonight; he approves any change to the production cluster."
            ),
            A(
                "Looking at the rollout and the pods.",
                Call(
                    "shell",
                    {
                        "command": [
                            "bash",
                            "-lc",
                            "kubectl rollout status deploy/search-api -n search --timeout=30s",
                        ],
                        "workdir": "/home/dev/infra",
                    },
                    _codex(
                        'Waiting for deployment "search-api" rollout to finish: 0 of 3 updated replicas are available...\nerror: timed out waiting for the condition',
                        1,
                    ),
                ),
                Call(
                    "shell",
                    {
                        "command": [
                            "bash",
                            "-lc",
                            "kubectl describe pod -n search -l app=search-api | tail -n 60",
                        ],
                        "workdir": "/home/dev/infra",
                    },
                    _codex(
                        log(311, 30, "kubelet")
                        + '\n  Warning  Unhealthy  12s (x9 over 2m)  kubelet  Readiness probe failed: Get "http://10.42.3.17:8080/healthz": context deadline exceeded\n'
                        + log(312, 20, "kubelet")
                    ),
                ),
            ),
            A("The readiness probe on port 8080 times out; the pods never turn ready."),
            A(
                "Checking the chart values and the image.",
                Call(
                    "shell",
                    {
                        "command": ["bash", "-lc", "cat charts/search-api/values-prod.yaml"],
                        "workdir": "/home/dev/infra",
                    },
                    _codex(
                        "replicaCount: 3\nimage:\n  repository: registry.internal/search-api\n  tag: 4.8.1\nreadinessProbe:\n  path: /healthz\n  port: 8080\n  timeoutSeconds: 1\n  periodSeconds: 10\nresources:\n  limits:\n    memory: 1536Mi\n    cpu: 2\n"
                        + listing(313, 12, "charts/search-api/templates")
                    ),
                ),
            ),
            A("The image tag is 4.8.1 and the probe timeout is 1 second."),
            A(
                "Warm-up time of the new index loader.",
                Call(
                    "exec_command",
                    {
                        "cmd": "kubectl logs -n search search-api-7d9f-abc12 | grep -m1 'index loaded'"
                    },
                    "Chunk ID: 2be1\nWall time: 0.4 seconds\nProcess exited with code 0\nOriginal token count: 21\nOutput:\n2024-05-14T21:03:44Z INFO search-api index loaded shards=24 took=6.4s",
                ),
            ),
            A(
                "The loader needs 6.4s before /healthz answers, far past the 1 second probe timeout."
            ),
            U(
                "never restart the whole statefulset for the index, only the deployment. and keep the change in the chart, not kubectl edit."
            ),
            A(
                "Decision: add a startupProbe with failureThreshold 30 rather than raising the readiness timeout, because a long readiness timeout would also delay detecting a hung pod later.",
                Call(
                    "apply_patch",
                    {
                        "input": "*** Begin Patch\n*** Update File: charts/search-api/values-prod.yaml\n@@\n-  timeoutSeconds: 1\n+  timeoutSeconds: 2\n*** Update File: charts/search-api/templates/deployment.yaml\n@@\n+        startupProbe:\n+          failureThreshold: 30\n*** Add File: charts/search-api/templates/NOTES-probes.md\n+Startup probe covers index warm-up.\n*** End Patch"
                    },
                    "Success. Updated the following files:\nM charts/search-api/values-prod.yaml\nM charts/search-api/templates/deployment.yaml\nA charts/search-api/templates/NOTES-probes.md",
                ),
            ),
            A(
                chatter(32),
                Call(
                    "shell",
                    {
                        "command": [
                            "bash",
                            "-lc",
                            "helm lint charts/search-api && helm template charts/search-api -f charts/search-api/values-prod.yaml | kubeconform -summary",
                        ]
                    },
                    _codex(
                        "==> Linting charts/search-api\n[INFO] Chart.yaml: icon is recommended\n\n1 chart(s) linted, 0 chart(s) failed\nSummary: 14 resources found in 1 file - Valid: 14, Invalid: 0, Errors: 0, Skipped: 0"
                    ),
                ),
            ),
            A("The chart lints clean: 14 resources valid."),
            A(
                "Chart version.",
                Call(
                    "shell",
                    {
                        "command": [
                            "bash",
                            "-lc",
                            "grep -E '^(version|appVersion)' charts/search-api/Chart.yaml",
                        ]
                    },
                    _codex('version: 0.19.2\nappVersion: "4.8.1"'),
                ),
            ),
            A("I bumped the chart to 0.19.3 for this change; it was 0.19.2."),
            U(
                "Rollout window is 22:30 UTC. After the deploy, check p99 latency stays under 180 ms."
            ),
            A("Open: wait for Marek's approval, deploy at 22:30 UTC, then watch p99 under 180 ms."),
        ],
        [
            Fact("person", ("Marek", "SRE"), "person with role"),
            Fact("tool_output", ("timed out waiting for the condition",), "rollout error"),
            Fact("tool_output", ("Readiness probe failed",), "probe error from describe"),
            Fact("tool_output", ("8080",), "probe port"),
            Fact("tool_output", ("4.8.1",), "image tag from values file"),
            Fact("tool_output", ("6.4s",), "index warm-up from logs"),
            Fact("conclusion", ("6.4", "1 second"), "why the probe fails"),
            Fact("constraint", ("statefulset",), "never restart the statefulset"),
            Fact("constraint", ("kubectl edit",), "keep the change in the chart"),
            Fact("decision", ("startupProbe", "hung"), "startup probe and why"),
            Fact("path", ("values-prod.yaml",), "values file changed"),
            Fact("path", ("deployment.yaml",), "template changed"),
            Fact("number", ("0.19.3",), "chart version, superseding 0.19.2"),
            Fact("number", ("14",), "resources valid"),
            Fact("number", ("22:30",), "rollout window"),
            Fact("number", ("180",), "p99 limit"),
        ],
    ),
    # -- data pipeline, Claude Code tool shapes ------------------------------------------------------
    Session(
        "c3-etl",
        [
            U(
                "The nightly orders ETL is getting OOM-killed on the 8 GiB worker. Marco is the data platform lead and signs off any schema change."
            ),
            A(
                "Versions and the job config first.",
                Call(
                    "Bash",
                    {"command": "pip freeze | grep -iE 'pandas|pyarrow|boto3'"},
                    "boto3==1.34.84\npandas==2.2.1\npyarrow==15.0.2",
                ),
                Call(
                    "Read",
                    {"file_path": "/repo/etl/jobs/orders.yaml"},
                    'job: orders_nightly\nsource: s3://analytics-raw/orders/\ntarget: s3://analytics-staging/orders_clean/\nchunk_rows: 500000\npartitions: 64\nschedule: "15 2 * * *"\n'
                    + "\n".join(f"# column {i}: c_{i}" for i in range(30)),
                ),
            ),
            A("The job reads in chunks of 500000 rows into 64 partitions."),
            A(
                "Reproducing the memory peak.",
                Call(
                    "Bash",
                    {"command": "python -m etl.run orders --date 2024-05-13 --profile-memory"},
                    log(321, 40, "etl")
                    + "\nMemoryError: Unable to allocate 3.91 GiB for an array with shape (500000, 1024) and data type float64\n"
                    + 'Traceback (most recent call last):\n  File "etl/run.py", line 88, in main\n    frame = reader.next_chunk()\nKilled',
                ),
            ),
            A("The column is created_at, so I'll parse that as the timestamp."),
            A(
                "Checking the schema.",
                Call(
                    "Bash",
                    {
                        "command": "python -c \"import pyarrow.parquet as pq; print(pq.read_schema('sample.parquet'))\""
                    },
                    'order_id: int64\ncustomer_id: int64\norder_ts: timestamp[us, tz=UTC]\namount_cents: int64\ncurrency: string\nstatus: string\n-- schema metadata --\npandas: \'{"index_columns": [], "column_indexes": []}\'',
                ),
            ),
            A(
                "Correction: the timestamp column is order_ts, not created_at; the sample schema shows it."
            ),
            U("Never write to s3://analytics-prod from a dev run. Use the staging bucket only."),
            A(
                "Decision: cut chunk_rows to 250000 and drop the wide feature columns before the merge, since the merge doubles peak memory and 250k keeps the peak near 3 GiB.",
                Call(
                    "Edit",
                    {
                        "file_path": "/repo/etl/jobs/orders.yaml",
                        "old_string": "chunk_rows: 500000",
                        "new_string": "chunk_rows: 250000",
                    },
                    "The file /repo/etl/jobs/orders.yaml has been updated.",
                ),
                Call(
                    "Edit",
                    {
                        "file_path": "/repo/etl/transforms/orders.py",
                        "old_string": "frame = frame.merge(",
                        "new_string": "frame = frame.drop(columns=WIDE).merge(",
                    },
                    "The file /repo/etl/transforms/orders.py has been updated.",
                ),
            ),
            A(
                chatter(33),
                Call(
                    "Bash",
                    {
                        "command": "python -m etl.run orders --date 2024-05-13 --profile-memory --target s3://analytics-staging/orders_clean/"
                    },
                    log(322, 60, "etl")
                    + "\npeak_rss_mib=3012 rows_written=4213377 files=64 elapsed=812s",
                ),
            ),
            A(
                "With 250000-row chunks the peak is 3012 MiB and all 4213377 rows were written in 812s."
            ),
            U("Nice. Does the schema change need sign-off?"),
            A(
                "Yes: dropping the wide columns changes the output schema, so Marco has to approve it before we merge."
            ),
            A(
                "Tests.",
                Call(
                    "Bash",
                    {"command": "pytest etl/tests -q"},
                    passing_tests(323, 57, "etl/tests/test_orders.py")
                    + "\n"
                    + "FAILED etl/tests/test_schema.py::test_columns_stable - AssertionError: 23 != 29",
                ),
            ),
            A(
                "One failure, test_columns_stable, expected since 6 columns are gone; I'll update it after Marco approves."
            ),
        ],
        [
            Fact("person", ("Marco", "data platform"), "person with role"),
            Fact("tool_output", ("2.2.1",), "pandas version"),
            Fact("tool_output", ("15.0.2",), "pyarrow version"),
            Fact("tool_output", ("3.91 GiB",), "allocation that failed"),
            Fact("number", ("order_ts",), "corrected column name"),
            Fact("constraint", ("analytics-prod",), "never write to prod bucket"),
            Fact("decision", ("250000", "merge"), "smaller chunks and why"),
            Fact("number", ("3012",), "new peak"),
            Fact("number", ("4213377",), "rows written"),
            Fact("path", ("etl/jobs/orders.yaml",), "job config edited"),
            Fact("path", ("etl/transforms/orders.py",), "transform edited"),
            Fact("tool_output", ("test_columns_stable",), "failing test"),
            Fact("tool_output", ("15 2 * * *",), "schedule from the job file"),
            Fact("conclusion", ("Marco", "approve"), "sign-off needed before merge"),
            Fact("tool_output", ("analytics-staging",), "target bucket"),
            Fact("number", ("64",), "partitions"),
        ],
    ),
    # -- mobile release, Codex tool shapes ----------------------------------------------------------
    Session(
        "c4-release",
        [
            U(
                "Cut the Android release candidate. Lena is the release manager; she signs off the Play Store upload."
            ),
            A(
                "Build tooling and versions.",
                Call(
                    "shell",
                    {"command": ["bash", "-lc", "./gradlew --version"], "workdir": "/src/app"},
                    _codex(
                        "\n------------------------------------------------------------\nGradle 8.7\n------------------------------------------------------------\n\nBuild time:   2024-03-22 15:52:46 UTC\nRevision:     650af14d7653aa949fce5e886e685efc9cf97c10\n\nKotlin:       1.9.22\nGroovy:       3.0.17\nAnt:          Apache Ant(TM) version 1.10.13 compiled on January 4 2023\nJVM:          17.0.10 (Eclipse Adoptium 17.0.10+7)\nOS:           Linux 6.5.0-35-generic amd64"
                    ),
                ),
                Call(
                    "shell",
                    {
                        "command": ["bash", "-lc", "sed -n 1,60p app/build.gradle.kts"],
                        "workdir": "/src/app",
                    },
                    _codex(
                        'plugins {\n    id("com.android.application") version "8.3.2"\n}\nandroid {\n    namespace = "com.example.shop"\n    compileSdk = 34\n    defaultConfig {\n        minSdk = 26\n        targetSdk = 34\n        versionCode = 4101\n        versionName = "5.12.0"\n    }\n}\n'
                        + source(331, 10)
                    ),
                ),
            ),
            A("We are on Gradle 8.7 with AGP 8.3.2; versionCode is 4101 and minSdk 26."),
            U("don't bump minSdk in this release, marketing promised 26."),
            A(
                "Building the release bundle.",
                Call(
                    "shell",
                    {
                        "command": ["bash", "-lc", "./gradlew :app:bundleRelease"],
                        "workdir": "/src/app",
                    },
                    _codex(
                        log(332, 30, "gradle")
                        + "\n> Task :app:mergeReleaseResources FAILED\n\nFAILURE: Build failed with an exception.\n\n* What went wrong:\nExecution failed for task ':app:mergeReleaseResources'.\n> Duplicate resources: values/strings.xml: string/checkout_title\n\nBUILD FAILED in 1m 12s",
                        1,
                    ),
                ),
            ),
            A(
                "The build fails on a duplicate string resource, checkout_title, defined in two modules."
            ),
            A(
                "Decision: keep checkout_title in the feature module and delete the copy in app, because the feature module owns the checkout strings and its translations are newer.",
                Call(
                    "apply_patch",
                    {
                        "input": '*** Begin Patch\n*** Update File: app/src/main/res/values/strings.xml\n@@\n-    <string name="checkout_title">Checkout</string>\n*** Update File: app/build.gradle.kts\n@@\n-        versionCode = 4101\n+        versionCode = 4102\n*** End Patch'
                    },
                    "Success. Updated the following files:\nM app/src/main/res/values/strings.xml\nM app/build.gradle.kts",
                ),
            ),
            A("versionCode is now 4102 for this candidate."),
            A(
                chatter(34),
                Call(
                    "shell",
                    {
                        "command": [
                            "bash",
                            "-lc",
                            "./gradlew :app:bundleRelease :app:testReleaseUnitTest",
                        ],
                        "workdir": "/src/app",
                    },
                    _codex(
                        log(333, 40, "gradle")
                        + "\n> Task :app:testReleaseUnitTest\n\n312 tests completed, 0 failed\n\nBUILD SUCCESSFUL in 4m 3s\n61 actionable tasks: 58 executed, 3 up-to-date"
                    ),
                ),
                Call(
                    "shell",
                    {"command": ["bash", "-lc", "ls -l app/build/outputs/bundle/release/"]},
                    _codex(
                        "total 48212\n-rw-r--r-- 1 dev dev 49366528 May 14 18:20 app-release.aab"
                    ),
                ),
            ),
            A("The bundle built: app-release.aab is 49366528 bytes, and 312 unit tests pass."),
            U("Release date is June 12."),
            U("Sorry, correction: the release date moved to June 14, legal needs two more days."),
            A(
                "Noted: release on June 14. Open: upload to the internal track, then Lena signs off the production rollout at 10%."
            ),
        ],
        [
            Fact("person", ("Lena", "release manager"), "person with role"),
            Fact("tool_output", ("Gradle 8.7",), "gradle version"),
            Fact("tool_output", ("8.3.2",), "AGP version from build file"),
            Fact("tool_output", ("17.0.10",), "JVM version"),
            Fact("number", ("4102",), "versionCode, superseding 4101"),
            Fact("tool_output", ("5.12.0",), "versionName"),
            Fact("constraint", ("minSdk",), "don't bump minSdk"),
            Fact("tool_output", ("mergeReleaseResources",), "failing task"),
            Fact("conclusion", ("checkout_title", "duplicate"), "why the build failed"),
            Fact("decision", ("feature module", "translations"), "which copy stays and why"),
            Fact("path", ("strings.xml",), "resource edited"),
            Fact("path", ("app/build.gradle.kts",), "build file edited"),
            Fact("number", ("312",), "unit tests"),
            Fact("number", ("49366528",), "bundle size"),
            Fact("number", ("June 14",), "release date, corrected from June 12"),
            Fact("number", ("10%",), "rollout percentage"),
        ],
    ),
]
