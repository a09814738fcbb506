# ruff: noqa: E501  (scripted session data: long tool outputs read better unwrapped)
"""Set E: a held-out set written before it was ever measured (5 domains, 71 facts).

The domains are new to the quality sets: a Terraform database upgrade, an embedded firmware
watchdog fix, a parser bug hunt, a mobile app release and a billing time-zone bug. The sessions
use the agents' own tool shapes (Claude Code's Bash/Read/Edit/MultiEdit/Write/Grep; Codex's
`shell` argv calls, `exec_command`, `apply_patch` and their output envelopes), long tool outputs
with the fact in their middle, several files a turn, facts restated then corrected, values later
superseded, conclusions stated only in replies, decisions with their reasons, limits, and people
with their roles. The set was written without reading the summarizers or the ledger, and was
measured once when it was added; only its totals are reported, never which facts were lost.
For a corrected or superseded fact the needle is the final value.
"""

from __future__ import annotations

import json
import random

from tests.perf.quality.script import A, Call, Fact, Session, U

# -- noise in the shapes these tools print ------------------------------------------------------

# Values planted as facts: random noise never prints them, so only the planted line holds them.
_PLANTED = ("502", "143")


def _numbered(lines: list[str], start: int = 1) -> str:
    """A file as Claude Code's Read tool returns it: right-aligned line numbers and an arrow."""
    return "\n".join(f"{n:>6}→{line}" for n, line in enumerate(lines, start))


def _codex_exec(output: str, code: int = 0, seconds: float = 1.2) -> str:
    """A Codex `shell` result in the plain-text envelope."""
    return f"Exit code: {code}\nWall time: {seconds} seconds\nOutput:\n{output}"


def _codex_json(output: str, code: int = 0, seconds: float = 0.9) -> str:
    """A Codex `shell` result in the JSON envelope of older rollouts."""
    return json.dumps(
        {"output": output, "metadata": {"exit_code": code, "duration_seconds": seconds}}
    )


def _unified(output: str, code: int = 0, seconds: float = 2.5, chunk: str = "5e0c21") -> str:
    """A Codex `exec_command` result."""
    tokens = max(1, len(output) // 4)
    return (
        f"Chunk ID: {chunk}\nWall time: {seconds:.4f} seconds\nProcess exited with code {code}\n"
        f"Original token count: {tokens}\nOutput:\n{output}"
    )


def _patched(*paths: str) -> str:
    body = "Success. Updated the following files:\n" + "".join(f"M {p}\n" for p in paths)
    return _codex_exec(body, seconds=0.0)


def _tf_refresh(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    kinds = [
        ("module.vpc.aws_subnet.private", "subnet"),
        ("module.vpc.aws_route_table_association.private", "rtbassoc"),
        ("module.eks.aws_security_group_rule.node_ingress", "sgrule"),
        ("module.alerts.aws_cloudwatch_metric_alarm.p95_latency", "alarm"),
        ("module.iam.aws_iam_role_policy_attachment.ci", "attach"),
        ("module.buckets.aws_s3_bucket_policy.artifacts", "policy"),
        ("module.dns.aws_route53_record.internal", "Z2ABCD"),
        ("module.queues.aws_sqs_queue.events", "https://sqs.eu-west-1.amazonaws.com/4127/events"),
    ]
    zones = ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
    lines = []
    for i in range(count):
        address, prefix = rng.choice(kinds)
        key = f'["{rng.choice(zones)}"]' if "subnet" in address or "rtb" in prefix else f"[{i % 7}]"
        ident = f"{rng.randrange(16**11):011x}"
        while any(needle in ident for needle in _PLANTED):
            ident = f"{rng.randrange(16**11):011x}"
        lines.append(f"{address}{key}: Refreshing state... [id={prefix}-0{ident}]")
    return lines


def _tf_module_body(seed: int, count: int) -> list[str]:
    """CloudWatch alarms: what makes a real RDS module long."""
    rng = random.Random(seed)
    metrics = [
        "CPUUtilization",
        "FreeableMemory",
        "ReadLatency",
        "WriteLatency",
        "DiskQueueDepth",
        "DatabaseConnections",
        "ReplicaLag",
        "SwapUsage",
    ]
    lines: list[str] = []
    for i in range(count):
        metric = rng.choice(metrics)
        lines += [
            f'resource "aws_cloudwatch_metric_alarm" "{metric.lower()}_{i}" {{',
            f'  alarm_name          = "${{local.name}}-{metric.lower()}-{i}"',
            '  namespace           = "AWS/RDS"',
            f'  metric_name         = "{metric}"',
            f'  statistic           = "{rng.choice(["Average", "Maximum"])}"',
            f"  period              = {rng.choice([60, 300])}",
            f"  evaluation_periods  = {rng.randint(2, 6)}",
            f"  threshold           = {rng.randint(5, 95)}",
            '  comparison_operator = "GreaterThanThreshold"',
            "  alarm_actions       = [var.alarm_topic_arn]",
            "  dimensions = {",
            "    DBInstanceIdentifier = aws_db_instance.main.identifier",
            "  }",
            "}",
            "",
        ]
    return lines


def _still_modifying(address: str, resource_id: str, seconds: int) -> list[str]:
    return [
        f"{address}: Still modifying... [id={resource_id}, {t // 60}m{t % 60}s elapsed]"
        if t >= 60
        else f"{address}: Still modifying... [id={resource_id}, {t}s elapsed]"
        for t in range(10, seconds, 10)
    ]


def _zephyr_log(seed: int, count: int, start: float) -> list[str]:
    rng = random.Random(seed)
    lines = []
    t = start
    for _ in range(count):
        t += rng.uniform(0.4, 2.6)
        stamp = f"[{int(t) // 3600:02d}:{int(t) % 3600 // 60:02d}:{t % 60:06.3f},{rng.randrange(1000):03d}]"
        lines.append(
            rng.choice(
                [
                    f"{stamp} <inf> sensor: moisture={rng.uniform(20, 48):.1f}% temp={rng.uniform(9, 24):.1f}C",
                    f"{stamp} <inf> power: vbat={rng.randint(2900, 3300)}mV",
                    f"{stamp} <dbg> radio: adv interval {rng.choice([1000, 2000])} ms, rssi {rng.randint(-92, -60)}",
                    f"{stamp} <inf> storage: settings saved ({rng.randint(12, 96)} B)",
                    f"{stamp} <dbg> sensor: sample window closed, n={rng.randint(8, 32)}",
                ]
            )
        )
    return lines


def _ninja(seed: int, count: int, total: int) -> list[str]:
    rng = random.Random(seed)
    dirs = [
        "zephyr/kernel/CMakeFiles/kernel.dir",
        "zephyr/drivers/gpio/CMakeFiles/drivers__gpio.dir",
        "zephyr/subsys/bluetooth/host/CMakeFiles/subsys__bluetooth__host.dir",
        "zephyr/subsys/fs/nvs/CMakeFiles/subsys__fs__nvs.dir",
        "zephyr/drivers/sensor/CMakeFiles/drivers__sensor.dir",
        "modules/hal_nordic/nrfx/CMakeFiles/modules__hal_nordic__nrfx.dir",
    ]
    files = [
        "sched.c",
        "work.c",
        "timeout.c",
        "gatt.c",
        "conn.c",
        "nvs.c",
        "nrfx_twim.c",
        "sht4x.c",
    ]
    return [
        f"[{i + 1}/{total}] Building C object {rng.choice(dirs)}/{rng.choice(files)}.obj"
        for i in range(count)
    ]


def _cargo_compiling(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    crates = [
        "proc-macro2",
        "unicode-ident",
        "quote",
        "syn",
        "serde",
        "arbitrary",
        "libfuzzer-sys",
        "cc",
        "jobserver",
        "once_cell",
        "smallvec",
        "logos",
        "logos-derive",
        "thiserror",
        "ariadne",
    ]
    return [
        f"   Compiling {rng.choice(crates)} v{rng.randint(0, 2)}.{rng.randint(0, 40)}.{rng.randint(0, 20)}"
        for _ in range(count)
    ]


def _cargo_tests(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    modules = ["lexer", "literals", "strings", "blocks", "interp", "spans", "recovery", "idents"]
    words = [
        "empty",
        "nested",
        "trailing_comma",
        "unicode",
        "escape",
        "comment",
        "keyword",
        "error",
    ]
    return [
        f"test {rng.choice(modules)}::{rng.choice(words)}_{rng.choice(words)}_{i} ... ok"
        for i in range(count)
    ]


def _gradle(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    projects = [
        ":react-native-maps",
        ":react-native-reanimated",
        ":react-native-screens",
        ":react-native-mmkv",
        ":app",
        ":react-native-gesture-handler",
        ":sentry_react-native",
    ]
    tasks = [
        "preReleaseBuild",
        "compileReleaseKotlin",
        "compileReleaseJavaWithJavac",
        "mergeReleaseResources",
        "generateReleaseBuildConfig",
        "packageReleaseResources",
        "bundleLibCompileToJarRelease",
        "extractReleaseAnnotations",
        "mergeReleaseJniLibFolders",
    ]
    states = ["", " UP-TO-DATE", " UP-TO-DATE", " NO-SOURCE", " FROM-CACHE"]
    return [
        f"> Task {rng.choice(projects)}:{rng.choice(tasks)}{rng.choice(states)}"
        for _ in range(count)
    ]


def _xcodebuild(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    pods = ["React-Core", "RNScreens", "RNReanimated", "react-native-maps", "Sentry", "MMKV"]
    files = [
        "RCTBridge.m",
        "RCTView.m",
        "RNSScreen.mm",
        "REANodesManager.mm",
        "AIRMap.m",
        "MMKV.mm",
    ]
    return [
        f"▸ Compiling {rng.choice(files)} (in target '{rng.choice(pods)}' from project 'Pods')"
        for _ in range(count)
    ]


def _invoice_rows(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    zones = ["Australia/Sydney", "Australia/Melbourne", "Australia/Brisbane", "Australia/Perth"]
    rows = []
    for i in range(count):
        customer = 86400 + i * 15
        zone = rng.choice(zones)
        offset = {"Australia/Brisbane": 14, "Australia/Perth": 16}.get(zone, 13)
        row = (
            f" INV-2024-03-{60100 + i * 11:05d} | {customer:>11d} | {zone:<19} | 2024-03-31 {offset}:00:00+00 "
            f"| {rng.randint(1900, 98000):>11d} | 2024-04-01 00:{rng.randint(10, 59):02d}:{rng.randint(0, 59):02d}+00"
        )
        if not any(needle in row for needle in _PLANTED):
            rows.append(row)
    return rows


def _go_tests(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    names = ["Proration", "TaxLine", "Rounding", "Currency", "Discount", "UsageTier", "Credit"]
    lines = []
    for i in range(count):
        name = f"Test{rng.choice(names)}{rng.choice(names)}{i}"
        lines += [f"=== RUN   {name}", f"--- PASS: {name} (0.00s)"]
    return lines


# -- e1: a Terraform database upgrade, Claude Code's tool shapes ------------------------------

_INFRA = "/home/dana/src/platform-infra"

_RDS_HEAD = [
    "locals {",
    '  name = "${var.env}-core-db"',
    "}",
    "",
    'resource "aws_db_subnet_group" "main" {',
    "  name       = local.name",
    "  subnet_ids = var.subnet_ids",
    "}",
    "",
    'resource "aws_db_parameter_group" "pg13" {',
    '  name   = "${local.name}-pg13"',
    '  family = "postgres13"',
    "",
    "  parameter {",
    '    name  = "work_mem"',
    '    value = "65536"',
    "  }",
    "  parameter {",
    '    name         = "rds.logical_replication"',
    '    value        = "1"',
    '    apply_method = "pending-reboot"',
    "  }",
    "  parameter {",
    '    name         = "shared_preload_libraries"',
    '    value        = "pg_stat_statements"',
    '    apply_method = "pending-reboot"',
    "  }",
    "}",
    "",
]
_RDS_INSTANCE = [
    'resource "aws_db_instance" "main" {',
    "  identifier                   = local.name",
    '  engine                       = "postgres"',
    "  engine_version               = var.engine_version",
    "  instance_class               = var.instance_class",
    "  allocated_storage            = var.allocated_storage",
    "  max_allocated_storage        = var.allocated_storage * 2",
    '  storage_type                 = "gp3"',
    "  db_subnet_group_name         = aws_db_subnet_group.main.name",
    "  parameter_group_name         = aws_db_parameter_group.pg13.name",
    "  maintenance_window           = var.maintenance_window",
    "  backup_retention_period      = 7",
    "  apply_immediately            = var.apply_immediately",
    "  deletion_protection          = true",
    "  performance_insights_enabled = true",
    "  skip_final_snapshot          = false",
    "}",
    "",
]
_RDS_MAIN = _RDS_HEAD + _tf_module_body(101, 9) + _RDS_INSTANCE + _tf_module_body(102, 8)
_RDS_LINE = len(_RDS_HEAD) + len(_tf_module_body(101, 9)) + 1

_STAGING_RDS = [
    'module "rds" {',
    '  source = "../../modules/rds"',
    "",
    '  env                = "staging"',
    '  engine_version     = "13.14"',
    '  instance_class     = "db.r6g.large"',
    "  allocated_storage  = 200",
    '  maintenance_window = "sun:03:00-sun:04:00"',
    "  apply_immediately  = true",
    "  subnet_ids         = data.terraform_remote_state.vpc.outputs.private_subnet_ids",
    "  alarm_topic_arn    = data.terraform_remote_state.alerts.outputs.db_topic_arn",
    "}",
]

_PLAN = "\n".join(
    [
        *_tf_refresh(103, 140),
        "module.rds.aws_db_instance.main: Refreshing state... [id=db-7QK2VNR4ZJ3M5XW]",
        "",
        "Terraform used the selected providers to generate the following execution plan. Resource",
        "actions are indicated with the following symbols:",
        "  + create",
        "  ~ update in-place",
        "",
        "Terraform will perform the following actions:",
        "",
        "  # module.rds.aws_db_instance.main will be updated in-place",
        '  ~ resource "aws_db_instance" "main" {',
        '      ~ engine_version               = "13.14" -> "15.6"',
        '        id                           = "db-7QK2VNR4ZJ3M5XW"',
        '      ~ parameter_group_name         = "staging-core-db-pg13" -> "staging-core-db-pg15"',
        "        # (48 unchanged attributes hidden)",
        "    }",
        "",
        "  # module.rds.aws_db_parameter_group.pg15 will be created",
        '  + resource "aws_db_parameter_group" "pg15" {',
        '      + family = "postgres15"',
        '      + name   = "staging-core-db-pg15"',
        "      + parameter {",
        '          + name  = "work_mem"',
        '          + value = "65536"',
        "        }",
        "        # (2 unchanged blocks hidden)",
        "    }",
        "",
        "Plan: 1 to add, 1 to change, 0 to destroy.",
        "",
        *_tf_refresh(104, 120),
        "",
        "Saved the plan to: pg15.tfplan",
        "",
        "To perform exactly these actions, run the following command to apply:",
        '    terraform apply "pg15.tfplan"',
    ]
)

_APPLY_OK = "\n".join(
    [
        "module.rds.aws_db_instance.main: Modifying... [id=db-7QK2VNR4ZJ3M5XW]",
        *_still_modifying("module.rds.aws_db_instance.main", "db-7QK2VNR4ZJ3M5XW", 2292),
        "module.rds.aws_db_instance.main: Modifications complete after 38m12s [id=db-7QK2VNR4ZJ3M5XW]",
        "",
        "Apply complete! Resources: 0 added, 1 changed, 0 destroyed.",
    ]
)

_API_LOG = "\n".join(
    [
        f'2024-06-11T14:{m:02d}:{s:02d}.{ms:03d}Z level=info msg="request" route={r} status=200 dur_ms={d}'
        for m, s, ms, r, d in (
            (
                10 + i // 12,
                (i * 5) % 60,
                (i * 37) % 1000,
                ["/v2/projects", "/v2/users/me", "/v2/search", "/healthz"][i % 4],
                8 + (i * 13) % 90,
            )
            for i in range(96)
        )
    ]
    + [
        '2024-06-11T14:18:53.114Z level=error msg="query failed" err="FATAL: the database system is shutting down (SQLSTATE 57P03)"',
        '2024-06-11T14:18:53.120Z level=warn msg="upstream error" route=/v2/search status=502 dur_ms=4',
        '2024-06-11T14:19:07.406Z level=error msg="query failed" err="server closed the connection unexpectedly"',
        '2024-06-11T14:19:07.409Z level=warn msg="upstream error" route=/v2/projects status=502 dur_ms=11',
        '2024-06-11T14:22:58.771Z level=warn msg="upstream error" route=/v2/users/me status=502 dur_ms=3',
        '2024-06-11T14:23:14.020Z level=info msg="db pool healthy again" open=18 idle=12',
    ]
    + [
        f'2024-06-11T14:{24 + i // 12:02d}:{(i * 5) % 60:02d}.{(i * 53) % 1000:03d}Z level=info msg="request" route=/v2/projects status=200 dur_ms={9 + (i * 7) % 60}'
        for i in range(60)
    ]
)

_RDS_EVENTS = "\n".join(
    [
        "2024-06-11T13:41:02Z\tDB parameter group staging-core-db-pg15 created",
        "2024-06-11T13:44:38Z\tPerforming pre-upgrade check of the DB instance",
        "2024-06-11T13:45:51Z\tDB snapshot created: preupgrade-staging-core-db-13-14-to-15-6",
        "2024-06-11T14:18:52Z\tDB instance shutdown",
        "2024-06-11T14:19:20Z\tUpgrading database engine version",
        "2024-06-11T14:22:44Z\tDB instance restarted",
        "2024-06-11T14:22:57Z\tDatabase instance engine version upgrade completed: 13.14 to 15.6",
        "2024-06-11T14:23:31Z\tFinished applying modifications to DB parameter group",
    ]
)

E1 = Session(
    "e1-terraform-rds",
    [
        U(
            "Staging Postgres is still on 13 and standard support for it is running out. Could you move the staging RDS instance to Postgres 15 through Terraform? Everything is in platform-infra. Mirela Stanciu is our DBA; she wants to look at the parameter group before anything gets applied. One hard rule: you can run terraform plan against the prod workspace as much as you want, but never terraform apply there."
        ),
        A(
            "I'll check which workspace and tool versions this checkout uses first.",
            Call(
                "Bash",
                {
                    "command": "cd infra/envs/staging && terraform workspace show && terraform version",
                    "description": "Show Terraform workspace and versions",
                },
                "staging\nTerraform v1.7.5\non linux_amd64\n+ provider registry.terraform.io/hashicorp/aws v5.46.0\n+ provider registry.terraform.io/hashicorp/random v3.6.0",
            ),
        ),
        A(
            "Reading the RDS module and the staging call site together.",
            Call(
                "Read",
                {"file_path": f"{_INFRA}/infra/modules/rds/main.tf"},
                _numbered(_RDS_MAIN),
            ),
            Call(
                "Read",
                {"file_path": f"{_INFRA}/infra/envs/staging/rds.tf"},
                _numbered(_STAGING_RDS),
            ),
        ),
        A(
            "Staging passes its engine version in from envs/staging/rds.tf and the module pins one parameter group, pg13. Let me ask RDS which versions it can jump to directly.",
            Call(
                "Bash",
                {
                    "command": "aws rds describe-db-engine-versions --engine postgres --engine-version 13.14 --query 'DBEngineVersions[].ValidUpgradeTarget[].EngineVersion' --output text",
                    "description": "List valid upgrade targets",
                },
                "13.15\t13.16\t14.11\t14.12\t14.13\t15.5\t15.6\t16.2\t16.3",
            ),
        ),
        U(
            "Before you pick one: CDC goes through Debezium and the connector version we're stuck on is only certified up to Postgres 15. So no 16. Also keep it on db.r6g.large, we don't have budget for a bigger class this quarter."
        ),
        A(
            "Then 15.6: it's the newest 15.x RDS will upgrade us to in one step, and 16 is out because of the Debezium connector. I'll put a postgres15 parameter group in its own file, carrying over the settings the 13 group has, and point the module at it.",
            Call(
                "Write",
                {
                    "file_path": f"{_INFRA}/infra/modules/rds/parameter_groups.tf",
                    "content": 'resource "aws_db_parameter_group" "pg15" {\n  name   = "${local.name}-pg15"\n  family = "postgres15"\n\n  parameter {\n    name  = "work_mem"\n    value = "65536"\n  }\n  parameter {\n    name         = "rds.logical_replication"\n    value        = "1"\n    apply_method = "pending-reboot"\n  }\n  parameter {\n    name         = "shared_preload_libraries"\n    value        = "pg_stat_statements"\n    apply_method = "pending-reboot"\n  }\n}\n',
                },
                f"File created successfully at: {_INFRA}/infra/modules/rds/parameter_groups.tf",
            ),
            Call(
                "MultiEdit",
                {
                    "file_path": f"{_INFRA}/infra/modules/rds/main.tf",
                    "edits": [
                        {
                            "old_string": "  parameter_group_name         = aws_db_parameter_group.pg13.name",
                            "new_string": "  parameter_group_name         = aws_db_parameter_group.pg15.name",
                        }
                    ],
                },
                f'Applied 1 edit to {_INFRA}/infra/modules/rds/main.tf:\n1. Replaced "  parameter_group_name         = aws_db_parameter_group.pg13.name" with "  parameter_group_name         = aws_db_parameter_group.pg15.name"',
            ),
            Call(
                "Edit",
                {
                    "file_path": f"{_INFRA}/infra/envs/staging/rds.tf",
                    "old_string": '  engine_version     = "13.14"',
                    "new_string": '  engine_version     = "15.6"',
                },
                f"The file {_INFRA}/infra/envs/staging/rds.tf has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n"
                + _numbered(_STAGING_RDS[3:7], 4).replace('"13.14"', '"15.6"'),
            ),
        ),
        A(
            "Planning staging with the change saved to a plan file.",
            Call(
                "Bash",
                {
                    "command": "cd infra/envs/staging && terraform plan -out=pg15.tfplan",
                    "description": "Plan the staging upgrade",
                    "timeout": 600000,
                },
                _PLAN,
            ),
        ),
        A(
            "The plan only touches the instance and adds the new parameter group; nothing gets destroyed. I'll wait for Mirela's review before applying."
        ),
        U(
            "Mirela went through it. She wants work_mem at 32MB, not 64MB: 64MB per sort node is what ran the read replica out of memory last winter. Also heads-up: Tomasz Wróbel is the platform on-call this week, post in #platform-oncall before you apply anything on staging."
        ),
        A(
            "Changing work_mem to 32MB (the parameter is in kB, so 32768) and snapshotting the instance before the apply.",
            Call(
                "Edit",
                {
                    "file_path": f"{_INFRA}/infra/modules/rds/parameter_groups.tf",
                    "old_string": '    name  = "work_mem"\n    value = "65536"',
                    "new_string": '    name  = "work_mem"\n    value = "32768"',
                },
                f"The file {_INFRA}/infra/modules/rds/parameter_groups.tf has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n"
                + _numbered(
                    ["  parameter {", '    name  = "work_mem"', '    value = "32768"', "  }"], 5
                ),
            ),
            Call(
                "Bash",
                {
                    "command": "aws rds create-db-snapshot --db-instance-identifier staging-core-db --db-snapshot-identifier staging-core-pre15-0611",
                    "description": "Manual snapshot before the upgrade",
                },
                json.dumps(
                    {
                        "DBSnapshot": {
                            "DBSnapshotIdentifier": "staging-core-pre15-0611",
                            "DBInstanceIdentifier": "staging-core-db",
                            "Engine": "postgres",
                            "AllocatedStorage": 200,
                            "Status": "creating",
                            "Port": 5432,
                            "AvailabilityZone": "eu-west-1b",
                            "VpcId": "vpc-0c41e7d2a9f3b1e55",
                            "InstanceCreateTime": "2021-09-14T08:12:40.518Z",
                            "MasterUsername": "core_admin",
                            "EngineVersion": "13.14",
                            "SnapshotType": "manual",
                            "StorageType": "gp3",
                            "Encrypted": True,
                            "KmsKeyId": "arn:aws:kms:eu-west-1:412700938811:key/5d1f0a3c-7e2b-4c9d-8a61-2f0e9b7c3d14",
                            "DBSnapshotArn": "arn:aws:rds:eu-west-1:412700938811:snapshot:staging-core-pre15-0611",
                        }
                    },
                    indent=4,
                ),
            ),
        ),
        A(
            "The snapshot is being created. Could you give Tomasz the heads-up in #platform-oncall? I'll hold the apply until you say go."
        ),
        U("Told him, he's watching the dashboards. Go ahead."),
        A(
            "Re-planning with the smaller work_mem and applying on staging.",
            Call(
                "Bash",
                {
                    "command": "cd infra/envs/staging && terraform plan -out=pg15.tfplan >/dev/null && terraform apply pg15.tfplan",
                    "description": "Apply the staging upgrade",
                    "timeout": 600000,
                },
                "Exit code 1\n"
                "module.rds.aws_db_parameter_group.pg15: Creating...\n"
                "module.rds.aws_db_parameter_group.pg15: Creation complete after 2s [id=staging-core-db-pg15]\n"
                "module.rds.aws_db_instance.main: Modifying... [id=db-7QK2VNR4ZJ3M5XW]\n"
                "╷\n"
                "│ Error: updating RDS DB Instance (staging-core-db): operation error RDS: ModifyDBInstance, https response error StatusCode: 400, RequestID: 6b1e0f4a-93c2-4d7e-b0a8-1c52e9f7d310, api error InvalidParameterCombination: The AllowMajorVersionUpgrade flag must be present when upgrading to a new major version.\n"
                "│ \n"
                "│   with module.rds.aws_db_instance.main,\n"
                f'│   on ../../modules/rds/main.tf line {_RDS_LINE}, in resource "aws_db_instance" "main":\n'
                f'│   {_RDS_LINE}: resource "aws_db_instance" "main" {{\n'
                "│ \n"
                "╵",
                error=True,
            ),
        ),
        A(
            "RDS refuses a major-version jump unless the instance resource explicitly allows it. Adding the flag to the module, defaulting to false so other environments don't opt in by accident.",
            Call(
                "Edit",
                {
                    "file_path": f"{_INFRA}/infra/modules/rds/main.tf",
                    "old_string": "  engine_version               = var.engine_version\n",
                    "new_string": "  engine_version               = var.engine_version\n  allow_major_version_upgrade  = var.allow_major_version_upgrade\n",
                },
                f"The file {_INFRA}/infra/modules/rds/main.tf has been updated.",
            ),
            Call(
                "Edit",
                {
                    "file_path": f"{_INFRA}/infra/modules/rds/variables.tf",
                    "old_string": 'variable "apply_immediately" {',
                    "new_string": 'variable "allow_major_version_upgrade" {\n  type    = bool\n  default = false\n}\n\nvariable "apply_immediately" {',
                },
                f"The file {_INFRA}/infra/modules/rds/variables.tf has been updated.",
            ),
            Call(
                "Edit",
                {
                    "file_path": f"{_INFRA}/infra/envs/staging/rds.tf",
                    "old_string": "  apply_immediately  = true",
                    "new_string": "  apply_immediately  = true\n  allow_major_version_upgrade = true",
                },
                f"The file {_INFRA}/infra/envs/staging/rds.tf has been updated.",
            ),
        ),
        A(
            "Retrying with the flag in place; the engine upgrade itself will take a while.",
            Call(
                "Bash",
                {
                    "command": "cd infra/envs/staging && terraform plan -out=pg15.tfplan >/dev/null && terraform apply pg15.tfplan",
                    "description": "Retry the staging apply",
                    "timeout": 600000,
                    "run_in_background": False,
                },
                _APPLY_OK,
            ),
        ),
        U(
            "Nice. The staging API threw a burst of 502s around 14:20 though. Was that the upgrade or is pgbouncer acting up again?"
        ),
        A(
            "Pulling the API log for that window and the RDS event stream side by side.",
            Call(
                "Bash",
                {
                    "command": "kubectl -n staging logs deploy/api --since-time=2024-06-11T14:10:00Z | head -n 170",
                    "description": "API logs around the 502s",
                },
                _API_LOG,
            ),
            Call(
                "Bash",
                {
                    "command": "aws rds describe-events --source-identifier staging-core-db --source-type db-instance --start-time 2024-06-11T13:30:00Z --query 'Events[].[Date,Message]' --output text",
                    "description": "RDS events during the apply",
                },
                _RDS_EVENTS,
            ),
        ),
        A(
            "It was the upgrade. Every 502 falls between the instance going down for the engine swap and coming back, and the API recovers on its own seconds after the restart; pgbouncer only relayed the refused connections. No change needed there."
        ),
        U(
            "Good. While you're in that file, move the staging maintenance window to Saturday 22:00-23:00 UTC; the batch jobs own Sunday night."
        ),
        A(
            "Done, staging now has sat:22:00-sat:23:00.",
            Call(
                "Edit",
                {
                    "file_path": f"{_INFRA}/infra/envs/staging/rds.tf",
                    "old_string": '  maintenance_window = "sun:03:00-sun:04:00"',
                    "new_string": '  maintenance_window = "sat:22:00-sat:23:00"',
                },
                f"The file {_INFRA}/infra/envs/staging/rds.tf has been updated.",
            ),
        ),
        U(
            "Ugh, scratch Saturday. The data team's backfills run Saturday nights. Make it Tuesday 05:00 to 06:00 UTC instead."
        ),
        A(
            "Switched it to Tuesday and checked that the plan only changes the window.",
            Call(
                "Edit",
                {
                    "file_path": f"{_INFRA}/infra/envs/staging/rds.tf",
                    "old_string": '  maintenance_window = "sat:22:00-sat:23:00"',
                    "new_string": '  maintenance_window = "tue:05:00-tue:06:00"',
                },
                f"The file {_INFRA}/infra/envs/staging/rds.tf has been updated.",
            ),
            Call(
                "Bash",
                {
                    "command": "cd infra/envs/staging && terraform plan -no-color | grep -E '^\\s+[~+-] |^Plan:'",
                    "description": "Confirm the plan only moves the window",
                },
                '      ~ maintenance_window           = "sun:03:00-sun:04:00" -> "tue:05:00-tue:06:00"\nPlan: 0 to add, 1 to change, 0 to destroy.',
            ),
        ),
        A(
            "Staging is upgraded with the window moved. Still to do: a plan (plan only) against the prod workspace for Mirela, and the window change still needs its apply on staging."
        ),
    ],
    [
        Fact("person", ("Mirela Stanciu", "DBA"), "who reviews the parameter group"),
        Fact("constraint", ("apply", "prod"), "never apply in the prod workspace"),
        Fact("tool_output", ("13.14",), "current engine version, read from the staging file"),
        Fact("decision", ("15.6", "Debezium"), "target version and why not 16"),
        Fact("constraint", ("db.r6g.large",), "keep the instance class"),
        Fact("number", ("32MB",), "work_mem, corrected down from 64MB"),
        Fact("person", ("Tomasz", "on-call"), "who to warn before applying"),
        Fact("tool_output", ("staging-core-pre15-0611",), "snapshot taken before the upgrade"),
        Fact("tool_output", ("AllowMajorVersionUpgrade",), "why the first apply failed"),
        Fact("number", ("38m12s",), "how long the instance upgrade took"),
        Fact("conclusion", ("502", "restart"), "the 502s were the upgrade restart, not pgbouncer"),
        Fact("number", ("tue:05:00",), "maintenance window, after Saturday was dropped"),
        Fact("path", ("modules/rds/parameter_groups.tf",), "new parameter group file"),
        Fact("path", ("envs/staging/rds.tf",), "staging call site edited"),
    ],
)


# -- e2: an embedded firmware watchdog fix, Codex shell calls ------------------------------------

_FW = "/home/kofi/src/soilprobe-fw"


def _sh(script: str) -> dict[str, object]:
    return {"command": ["bash", "-lc", script], "workdir": _FW, "timeout_ms": 120000}


_UART = "\n".join(
    [
        "--- Miniterm on /dev/ttyUSB0  115200,8,N,1 ---",
        "*** Booting Zephyr OS build v3.5.0 ***",
        "[00:00:00.004,211] <inf> main: soilprobe fw 2.3.1 board rev C",
        "[00:00:00.004,390] <inf> main: reset reason 0x00000001 (RESETPIN)",
        *_zephyr_log(201, 230, 1.0),
        "[03:41:08.402,117] <inf> storage: settings saved (64 B)",
        "[03:41:08.402,530] <dbg> nvs: gc: sector 5 -> 6, moving 112 ate",
        "[03:41:17.118,562] <err> task_wdt: Task watchdog channel 2 callback, thread: storage_thread",
        "[03:41:17.118,700] <err> wdt: watchdog fired, last feed 8712 ms ago (timeout 8000 ms)",
        "*** Booting Zephyr OS build v3.5.0 ***",
        "[00:00:00.004,198] <inf> main: soilprobe fw 2.3.1 board rev C",
        "[00:00:00.004,377] <inf> main: reset reason 0x00000002 (DOG)",
        "[00:00:00.011,802] <inf> storage: nvs mounted, 8 sectors, free 1.9%",
        *_zephyr_log(202, 210, 0.02),
    ]
)

_STORAGE_C = (
    [
        "/* Settings persistence: one thread owns the NVS file system. */",
        "",
        "#include <zephyr/kernel.h>",
        "#include <zephyr/fs/nvs.h>",
        "#include <zephyr/settings/settings.h>",
        "#include <zephyr/task_wdt/task_wdt.h>",
        '#include "storage.h"',
        '#include "watchdog.h"',
        "",
        "LOG_MODULE_REGISTER(storage, CONFIG_APP_LOG_LEVEL);",
        "",
        "K_MSGQ_DEFINE(settings_q, sizeof(struct settings_req), 16, 4);",
        "static struct nvs_fs fs;",
        "static int wdt_ch_storage;",
        "",
    ]
    + [
        line
        for key in (
            "interval",
            "calib_dry",
            "calib_wet",
            "adv_name",
            "tx_power",
            "alarm_lo",
            "alarm_hi",
            "tz_offset",
        )
        for line in (
            f"static int set_{key}(const char *name, size_t len, settings_read_cb read_cb, void *cb_arg)",
            "{",
            f"\tif (len != sizeof(cfg.{key})) {{",
            "\t\treturn -EINVAL;",
            "\t}",
            f"\treturn read_cb(cb_arg, &cfg.{key}, len) < 0 ? -EIO : 0;",
            "}",
            "",
        )
    ]
    + [
        "static void wdt_cb(int channel_id, void *user_data)",
        "{",
        '\tLOG_ERR("storage watchdog expired");',
        "}",
        "",
        "static void storage_thread(void *a, void *b, void *c)",
        "{",
        "\twdt_ch_storage = task_wdt_add(WDT_TIMEOUT_MS, wdt_cb, NULL);",
        "",
        "\twhile (true) {",
        "\t\tstruct settings_req req;",
        "",
        "\t\tk_msgq_get(&settings_q, &req, K_FOREVER);",
        "\t\t/* May run NVS garbage collection: erases and copies a whole sector. */",
        "\t\tsettings_save_one(req.key, req.val, req.len);",
        "\t\ttask_wdt_feed(wdt_ch_storage);",
        "\t}",
        "}",
        "",
        "K_THREAD_DEFINE(storage_tid, 2048, storage_thread, NULL, NULL, NULL, 7, 0, 0);",
    ]
)

_PRJ_CONF = "\n".join(
    [
        "# Application",
        "CONFIG_APP_LOG_LEVEL_INF=y",
        "CONFIG_LOG=y",
        "CONFIG_LOG_BACKEND_UART=y",
        "CONFIG_SERIAL=y",
        "CONFIG_GPIO=y",
        "CONFIG_I2C=y",
        "CONFIG_SENSOR=y",
        "CONFIG_SHT4X=y",
        "CONFIG_ADC=y",
        "# Bluetooth",
        "CONFIG_BT=y",
        "CONFIG_BT_PERIPHERAL=y",
        'CONFIG_BT_DEVICE_NAME="soilprobe"',
        "CONFIG_BT_MAX_CONN=1",
        "CONFIG_BT_GATT_DYNAMIC_DB=y",
        "# Storage",
        "CONFIG_FLASH=y",
        "CONFIG_FLASH_MAP=y",
        "CONFIG_NVS=y",
        "CONFIG_SETTINGS=y",
        "CONFIG_SETTINGS_NVS=y",
        "CONFIG_NVS_LOOKUP_CACHE=y",
        "# Watchdog",
        "CONFIG_WATCHDOG=y",
        "CONFIG_TASK_WDT=y",
        "CONFIG_TASK_WDT_HW_FALLBACK=y",
        "CONFIG_TASK_WDT_MIN_TIMEOUT=100",
        "# Boot",
        "CONFIG_BOOTLOADER_MCUBOOT=y",
        'CONFIG_MCUBOOT_SIGNATURE_KEY_FILE="keys/fleet-ec256.pem"',
        "CONFIG_IMG_MANAGER=y",
        "CONFIG_MCUMGR=y",
        "CONFIG_MCUMGR_TRANSPORT_BT=y",
        "# Power",
        "CONFIG_PM_DEVICE=y",
        "CONFIG_PM_DEVICE_RUNTIME=y",
        "CONFIG_MAIN_STACK_SIZE=2048",
        "CONFIG_SYSTEM_WORKQUEUE_STACK_SIZE=2048",
        "CONFIG_HEAP_MEM_POOL_SIZE=4096",
    ]
)

_OVERLAY_PATCH_1 = """*** Begin Patch
*** Update File: app/src/storage.c
@@ static void storage_thread(void *a, void *b, void *c)
 \t\tk_msgq_get(&settings_q, &req, K_FOREVER);
-\t\t/* May run NVS garbage collection: erases and copies a whole sector. */
-\t\tsettings_save_one(req.key, req.val, req.len);
+\t\tnvs_write_async(&fs, req.id, req.val, req.len, storage_gc_progress);
 \t\ttask_wdt_feed(wdt_ch_storage);
*** Update File: app/boards/soil_probe_revc.overlay
@@ partitions
-\t\tslot0_partition: partition@c000 { label = "image-0"; reg = <0x0000c000 0x76000>; };
-\t\tslot1_partition: partition@82000 { label = "image-1"; reg = <0x00082000 0x76000>; };
-\t\tstorage_partition: partition@f8000 { label = "storage"; reg = <0x000f8000 0x8000>; };
+\t\tslot0_partition: partition@c000 { label = "image-0"; reg = <0x0000c000 0x72000>; };
+\t\tslot1_partition: partition@7e000 { label = "image-1"; reg = <0x0007e000 0x72000>; };
+\t\tstorage_partition: partition@f0000 { label = "storage"; reg = <0x000f0000 0x10000>; };
*** End Patch"""

_PATCH_2 = """*** Begin Patch
*** Update File: app/src/storage.c
@@
+K_THREAD_STACK_DEFINE(storage_wq_stack, 2048);
+static struct k_work_q storage_wq;
+static struct k_work reclaim_work;
+
+/* One sector per work item, so the channel is fed between erases. */
+static void reclaim_one(struct k_work *work)
+{
+\tif (nvs_ext_gc_step(&fs) > 0) {
+\t\tk_work_submit_to_queue(&storage_wq, &reclaim_work);
+\t}
+\ttask_wdt_feed(wdt_ch_storage);
+}
+
+void storage_start_wq(void)
+{
+\tk_work_init(&reclaim_work, reclaim_one);
+\tk_work_queue_start(&storage_wq, storage_wq_stack, K_THREAD_STACK_SIZEOF(storage_wq_stack),
+\t\t\t   K_LOWEST_APPLICATION_THREAD_PRIO, NULL);
+}
@@ static void storage_thread(void *a, void *b, void *c)
-\t\tnvs_write_async(&fs, req.id, req.val, req.len, storage_gc_progress);
+\t\twhile (nvs_ext_free_sectors(&fs) < 2) {
+\t\t\tk_work_submit_to_queue(&storage_wq, &reclaim_work);
+\t\t\tk_sleep(K_MSEC(50));
+\t\t\ttask_wdt_feed(wdt_ch_storage);
+\t\t}
+\t\tsettings_save_one(req.key, req.val, req.len);
*** Update File: app/src/main.c
@@ int main(void)
 \terr = watchdog_init();
+\tstorage_start_wq();
*** End Patch"""

_PATCH_3 = """*** Begin Patch
*** Update File: app/boards/soil_probe_revc.overlay
@@ partitions
-\t\tslot0_partition: partition@c000 { label = "image-0"; reg = <0x0000c000 0x72000>; };
-\t\tslot1_partition: partition@7e000 { label = "image-1"; reg = <0x0007e000 0x72000>; };
-\t\tstorage_partition: partition@f0000 { label = "storage"; reg = <0x000f0000 0x10000>; };
+\t\tslot0_partition: partition@c000 { label = "image-0"; reg = <0x0000c000 0x74000>; };
+\t\tslot1_partition: partition@80000 { label = "image-1"; reg = <0x00080000 0x74000>; };
+\t\tstorage_partition: partition@f4000 { label = "storage"; reg = <0x000f4000 0xc000>; };
*** End Patch"""

_BUILD_1 = "\n".join(
    [
        "-- west build: generating a build system",
        "Loading Zephyr default modules (Zephyr base (cached)).",
        "-- Application: /home/kofi/src/soilprobe-fw/app",
        "-- Board: soil_probe_revc",
        "-- Found toolchain: zephyr 0.16.5 (/opt/zephyr-sdk-0.16.5)",
        "-- Found BOARD.dts: /home/kofi/src/soilprobe-fw/boards/arm/soil_probe_revc/soil_probe_revc.dts",
        "-- Found devicetree overlay: /home/kofi/src/soilprobe-fw/app/boards/soil_probe_revc.overlay",
        "-- Configuring done",
        "-- Generating done",
        "-- west build: building application",
        *_ninja(211, 240, 412),
        "[241/412] Building C object app/CMakeFiles/app.dir/src/storage.c.obj",
        "FAILED: app/CMakeFiles/app.dir/src/storage.c.obj",
        "/home/kofi/src/soilprobe-fw/app/src/storage.c: In function 'storage_thread':",
        "/home/kofi/src/soilprobe-fw/app/src/storage.c:98:17: error: implicit declaration of function 'nvs_write_async'; did you mean 'nvs_write'? [-Werror=implicit-function-declaration]",
        "   98 |                 nvs_write_async(&fs, req.id, req.val, req.len, storage_gc_progress);",
        "      |                 ^~~~~~~~~~~~~~~",
        "      |                 nvs_write",
        "cc1: all warnings being treated as errors",
        *_ninja(212, 30, 412)[:30],
        "ninja: build stopped: subcommand failed.",
        "FATAL ERROR: command exited with status 1: /usr/bin/cmake --build /home/kofi/src/soilprobe-fw/build",
    ]
)

_BUILD_2 = "\n".join(
    [
        *_ninja(213, 396, 412),
        "[397/412] Linking C executable zephyr/zephyr_pre0.elf",
        "FAILED: zephyr/zephyr_pre0.elf zephyr/zephyr_pre0.map",
        "/opt/zephyr-sdk-0.16.5/arm-zephyr-eabi/bin/../lib/gcc/arm-zephyr-eabi/12.2.0/../../../../arm-zephyr-eabi/bin/ld.bfd: zephyr/zephyr_pre0.elf section `text' will not fit in region `FLASH'",
        "/opt/zephyr-sdk-0.16.5/arm-zephyr-eabi/bin/../lib/gcc/arm-zephyr-eabi/12.2.0/../../../../arm-zephyr-eabi/bin/ld.bfd: region `FLASH' overflowed by 3584 bytes",
        "collect2: error: ld returned 1 exit status",
        "ninja: build stopped: subcommand failed.",
        "FATAL ERROR: command exited with status 1: /usr/bin/cmake --build /home/kofi/src/soilprobe-fw/build",
    ]
)

_BUILD_3 = "\n".join(
    [
        *_ninja(214, 396, 412),
        "[397/412] Linking C executable zephyr/zephyr_pre0.elf",
        "[405/412] Linking C executable zephyr/zephyr_pre1.elf",
        "[411/412] Linking C executable zephyr/zephyr.elf",
        "Memory region         Used Size  Region Size  %age Used",
        "           FLASH:      470528 B       464 KB     99.03%",
        "             RAM:      203392 B       256 KB     77.59%",
        "        IDT_LIST:          0 GB        32 KB      0.00%",
        "[412/412] Generating zephyr/zephyr.signed.hex",
        "image.py: sign the payload",
        "image.py: sign the payload",
    ]
)


def _soak() -> str:
    rng = random.Random(215)
    lines = ["soak: /dev/ttyACM0 @ 115200, accelerated settings writes, 5000 cycles"]
    gc = 0
    for cycle in range(100, 5001, 100):
        gc += rng.randint(3, 6)
        gap = 1802 if cycle == 2600 else rng.randint(1180, 1760)
        lines.append(
            f"cycle {cycle:>4}/5000  gc_runs {gc:>3}  max_gc_ms {rng.randint(1210, 1700)}  wdt_gap_ms {gap}  resets 0"
        )
    lines.append(f"done: 5000 cycles, {gc} gc runs, longest gc 1710 ms, watchdog resets 0")
    return "\n".join(lines)


E2 = Session(
    "e2-firmware-watchdog",
    [
        U(
            "Field units of the soil probe (board rev C, nRF52840 on Zephyr) keep rebooting every few hours. Support grabbed a UART capture from unit 0417, it's in logs/. Hannah Okafor, our hardware lead, already measured the rails and says it's not power. And whatever you end up changing, leave the bootloader alone: it's signed and the units in the field can't take a new one over the air."
        ),
        A(
            "Let me read the capture around the reboots.",
            Call(
                "shell",
                _sh("cat logs/unit-0417-uart.txt"),
                _codex_exec(_UART, seconds=0.1),
            ),
        ),
        A(
            "This is the watchdog, not a brown-out: the boot banner after the reboot reports a DOG reset, and just before it the task watchdog names storage_thread as the thread that stopped feeding its channel. The capture says the unit runs 2.3.1."
        ),
        U(
            "Careful, that capture is from the bench unit. Field units are on 2.3.4. The storage code is the same in both."
        ),
        A(
            "Understood, field firmware is 2.3.4 with the same storage path. Finding every watchdog channel and who feeds it.",
            Call(
                "shell",
                _sh("rg -n 'task_wdt_(add|feed)|WDT_TIMEOUT_MS' app/src"),
                _codex_exec(
                    "app/src/watchdog.h:9:#define WDT_TIMEOUT_MS 8000\n"
                    "app/src/sensor.c:61:\twdt_ch_sensor = task_wdt_add(WDT_TIMEOUT_MS, NULL, NULL);\n"
                    "app/src/sensor.c:88:\t\ttask_wdt_feed(wdt_ch_sensor);\n"
                    "app/src/radio.c:44:\twdt_ch_radio = task_wdt_add(WDT_TIMEOUT_MS, NULL, NULL);\n"
                    "app/src/radio.c:102:\t\ttask_wdt_feed(wdt_ch_radio);\n"
                    "app/src/storage.c:88:\twdt_ch_storage = task_wdt_add(WDT_TIMEOUT_MS, wdt_cb, NULL);\n"
                    "app/src/storage.c:96:\t\ttask_wdt_feed(wdt_ch_storage);",
                    seconds=0.0,
                ),
            ),
        ),
        A(
            "Reading the storage thread and the build configuration.",
            Call(
                "shell",
                _sh("cat -n app/src/storage.c"),
                _codex_exec(
                    "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(_STORAGE_C, 1)),
                    seconds=0.0,
                ),
            ),
            Call("shell", _sh("cat app/prj.conf"), _codex_exec(_PRJ_CONF, seconds=0.0)),
        ),
        A(
            "The storage thread calls settings_save_one directly, so any garbage collection NVS needs happens on that thread. Measuring how long those collections take from the capture.",
            Call(
                "shell",
                _sh("python3 tools/nvs_stats.py logs/unit-0417-uart.txt"),
                _codex_exec(
                    "partition storage_partition @ 0xf8000, size 0x8000 (8 sectors x 4096 B)\n"
                    "ate size 8 B\n"
                    "settings writes 18211, gc runs 41\n"
                    "free after last gc: 1.9%\n"
                    "gc duration ms: p50 2380  p95 7902  max 9214\n"
                    "longest gc at 03:41:08.402 (sector 5 -> 6, 112 ate moved)",
                    seconds=0.4,
                ),
            ),
        ),
        A(
            "That settles the mechanism. The partition is almost full, so NVS garbage collection runs on nearly every save, and it runs inside the storage thread; the slowest collection took longer than the whole watchdog window, so the channel starved. Power and the crystal have nothing to do with it."
        ),
        U(
            "Please don't fix this by raising the watchdog timeout. The product was certified with 8 seconds and re-certifying is not happening."
        ),
        A(
            "Agreed. Plan: move settings persistence onto a dedicated low-priority work queue that reclaims one sector per work item and feeds its channel between items, and give NVS more sectors so reclaiming is rare. Raising the timeout would only hide real hangs. First cut also doubles the storage partition to 0x10000.",
            Call(
                "apply_patch",
                {"input": _OVERLAY_PATCH_1},
                _patched("app/src/storage.c", "app/boards/soil_probe_revc.overlay"),
            ),
        ),
        A(
            "Building for the rev C board.",
            Call(
                "shell",
                _sh("west build -b soil_probe_revc app -p auto"),
                _codex_exec(_BUILD_1, code=1, seconds=48.3),
            ),
        ),
        A(
            "Our NVS has no asynchronous write. I'll reclaim with the nvs_ext step function from lib/nvs_ext instead, driven from the new work queue.",
            Call(
                "apply_patch", {"input": _PATCH_2}, _patched("app/src/storage.c", "app/src/main.c")
            ),
        ),
        A(
            "Building again.",
            Call(
                "shell",
                _sh("west build -b soil_probe_revc app -p auto"),
                _codex_exec(_BUILD_2, code=1, seconds=71.9),
            ),
        ),
        A(
            "The image no longer fits in the smaller slots. Doubling the partition was too greedy: I'll give storage 12 sectors (0xc000) and hand the rest back to the two image slots.",
            Call(
                "apply_patch", {"input": _PATCH_3}, _patched("app/boards/soil_probe_revc.overlay")
            ),
            Call(
                "shell",
                _sh("west build -b soil_probe_revc app -p auto"),
                _codex_exec(_BUILD_3, seconds=69.4),
            ),
        ),
        A(
            "It builds and signs. Flashing the bench unit and running the accelerated soak.",
            Call(
                "shell",
                {
                    **_sh(
                        "west flash --runner nrfjprog && python3 tools/soak.py --port /dev/ttyACM0 --accelerated --cycles 5000"
                    ),
                    "timeout_ms": 2400000,
                },
                _codex_exec(_soak(), seconds=1931.0),
            ),
        ),
        A("5000 accelerated cycles without a single watchdog reset."),
        U(
            "Good. Ama from the test lab will put three rev C units on a 72-hour soak once the branch is pushed. Call it fix/wdt-nvs-gc."
        ),
        A(
            "Pushing.",
            Call(
                "shell",
                _sh(
                    'git switch -c fix/wdt-nvs-gc && git commit -qam "storage: reclaim NVS sectors off the storage thread" && git push -u origin fix/wdt-nvs-gc'
                ),
                _codex_exec(
                    "Switched to a new branch 'fix/wdt-nvs-gc'\n"
                    "remote: \nremote: To create a merge request for fix/wdt-nvs-gc, visit:\n"
                    "remote:   https://git.internal/firmware/soilprobe-fw/-/merge_requests/new?merge_request%5Bsource_branch%5D=fix%2Fwdt-nvs-gc\n"
                    "remote: \n"
                    "To git.internal:firmware/soilprobe-fw.git\n"
                    " * [new branch]      fix/wdt-nvs-gc -> fix/wdt-nvs-gc\n"
                    "branch 'fix/wdt-nvs-gc' set up to track 'origin/fix/wdt-nvs-gc'.",
                    seconds=2.2,
                ),
            ),
        ),
        A(
            "The branch is up for Ama's soak. Left to do: bump VERSION to 2.3.5 after the 72 hours pass, and prepare the OTA image for the field units."
        ),
    ],
    [
        Fact("constraint", ("bootloader",), "the signed bootloader stays untouched"),
        Fact("person", ("Hannah Okafor", "hardware lead"), "who ruled out power"),
        Fact("tool_output", ("8712",), "how late the storage thread's feed was"),
        Fact("number", ("2.3.4",), "field firmware version, corrected from the bench 2.3.1"),
        Fact("tool_output", ("9214",), "slowest NVS garbage collection"),
        Fact(
            "conclusion",
            ("NVS", "garbage collection"),
            "GC on the storage thread starves the watchdog",
        ),
        Fact("constraint", ("certif",), "keep the 8 s watchdog timeout: certified with it"),
        Fact(
            "decision",
            ("work queue", "hide real hangs"),
            "reclaim off-thread, not a longer timeout",
        ),
        Fact("tool_output", ("nvs_write_async",), "the first build error"),
        Fact("number", ("0xc000",), "storage partition size, after 0x10000 was too big"),
        Fact("path", ("app/src/storage.c",), "main file changed"),
        Fact("path", ("soil_probe_revc.overlay",), "devicetree overlay with the partitions"),
        Fact("number", ("1802",), "longest watchdog gap in the soak"),
        Fact("person", ("Ama", "test lab"), "who runs the 72-hour soak"),
    ],
)


# -- e3: a parser bug hunt, Claude Code's tool shapes -----------------------------------------

_KES = "/home/sam/code/kestrel"

_EXPR_RS = (
    [
        "//! Expressions: a Pratt parser over the token stream.",
        "",
        "use kestrel_ast::{BinOp, Expr, Span, UnOp};",
        "",
        "use crate::error::ParseError;",
        "use crate::lexer::{Token, TokenKind};",
        "",
        "pub struct Parser<'src> {",
        "    tokens: Vec<Token<'src>>,",
        "    pos: usize,",
        "}",
        "",
        "fn infix_binding_power(op: BinOp) -> (u8, u8) {",
        "    match op {",
        "        BinOp::Or => (1, 2),",
        "        BinOp::And => (3, 4),",
        "        BinOp::Eq | BinOp::Ne => (5, 6),",
        "        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => (7, 8),",
        "        BinOp::Add | BinOp::Sub => (9, 10),",
        "        BinOp::Mul | BinOp::Div | BinOp::Rem => (11, 12),",
        "        // right-associative: 2 ** 3 ** 2 == 2 ** 9",
        "        BinOp::Pow => (16, 15),",
        "    }",
        "}",
        "",
        "impl<'src> Parser<'src> {",
        "    pub fn new(tokens: Vec<Token<'src>>) -> Self {",
        "        Self { tokens, pos: 0 }",
        "    }",
        "",
        "    pub fn expr(&mut self) -> Result<Expr, ParseError> {",
        "        self.expr_bp(0)",
        "    }",
        "",
        "    fn expr_bp(&mut self, min_bp: u8) -> Result<Expr, ParseError> {",
        "        let mut lhs = self.parse_prefix()?;",
        "        loop {",
        "            lhs = self.parse_postfix(lhs)?;",
        "            let Some(op) = self.peek_binop() else { break };",
        "            let (l_bp, r_bp) = infix_binding_power(op);",
        "            if l_bp < min_bp {",
        "                break;",
        "            }",
        "            self.bump();",
        "            let rhs = self.expr_bp(r_bp)?;",
        "            let span = lhs.span().to(rhs.span());",
        "            lhs = Expr::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs), span };",
        "        }",
        "        Ok(lhs)",
        "    }",
        "",
        "    fn parse_prefix(&mut self) -> Result<Expr, ParseError> {",
        "        let tok = self.bump();",
        "        match tok.kind {",
        "            TokenKind::Minus => {",
        "                let operand = self.expr_bp(17)?;",
        "                let span = tok.span.to(operand.span());",
        "                Ok(Expr::Unary { op: UnOp::Neg, operand: Box::new(operand), span })",
        "            }",
        "            TokenKind::Bang => {",
        "                let operand = self.expr_bp(17)?;",
        "                let span = tok.span.to(operand.span());",
        "                Ok(Expr::Unary { op: UnOp::Not, operand: Box::new(operand), span })",
        "            }",
        "            TokenKind::LParen => {",
        "                let inner = self.expr_bp(0)?;",
        "                self.expect(TokenKind::RParen)?;",
        "                Ok(inner)",
        "            }",
        "            TokenKind::Int(value) => Ok(Expr::Int(value, tok.span)),",
        "            TokenKind::Float(value) => Ok(Expr::Float(value, tok.span)),",
        "            TokenKind::Str(text) => Ok(Expr::Str(text.to_owned(), tok.span)),",
        "            TokenKind::Ident(name) => Ok(Expr::Var(name.to_owned(), tok.span)),",
        "            TokenKind::LBracket => self.parse_list(tok.span),",
        "            TokenKind::LBrace => self.parse_block(tok.span),",
        "            _ => Err(ParseError::Unexpected { found: tok.kind.describe(), span: tok.span }),",
        "        }",
        "    }",
        "",
    ]
    + [
        line
        for name, open_, close, ctor in (
            ("list", "LBracket", "RBracket", "List"),
            ("call_args", "LParen", "RParen", "Call"),
            ("index", "LBracket", "RBracket", "Index"),
            ("block", "LBrace", "RBrace", "Block"),
            ("record", "LBrace", "RBrace", "Record"),
            ("tuple", "LParen", "RParen", "Tuple"),
        )
        for line in (
            f"    fn parse_{name}(&mut self, start: Span) -> Result<Expr, ParseError> {{",
            "        let mut items = Vec::new();",
            f"        while !self.at(TokenKind::{close}) {{",
            "            items.push(self.expr_bp(0)?);",
            "            if !self.eat(TokenKind::Comma) {",
            "                break;",
            "            }",
            "        }",
            f"        let end = self.expect(TokenKind::{close})?;",
            f"        // opened by TokenKind::{open_}",
            f"        Ok(Expr::{ctor}(items, start.to(end)))",
            "    }",
            "",
        )
    ]
    + ["}"]
)

_FUZZ_CRASH = "\n".join(
    _cargo_compiling(301, 64)
    + [
        "    Finished `release` profile [optimized + debuginfo] target(s) in 41.17s",
        "     Running `target/x86_64-unknown-linux-gnu/release/parse_expr -artifact_prefix=/home/sam/code/kestrel/fuzz/artifacts/parse_expr/ fuzz/artifacts/parse_expr/crash-5d1e0c4b9a`",
        "INFO: Running with entropic power schedule (0xFF, 100).",
        "INFO: Seed: 3419872210",
        "INFO: Loaded 1 modules   (48211 inline 8-bit counters): 48211 [0x55f1c3a0e6b0, 0x55f1c3a1a203),",
        "INFO: Loaded 1 PC tables (48211 PCs): 48211 [0x55f1c3a1a208,0x55f1c3ad5738),",
        "target/x86_64-unknown-linux-gnu/release/parse_expr: Running 1 inputs 1 time(s) each.",
        "Running: fuzz/artifacts/parse_expr/crash-5d1e0c4b9a",
        "",
        "thread '<unnamed>' has overflowed its stack",
        "fatal runtime error: stack overflow",
        "==48211== ERROR: libFuzzer: deadly signal",
        "    #0 0x55f1c2e8a0b1 in __sanitizer_print_stack_trace /rustc/llvm/src/llvm-project/compiler-rt/lib/asan/asan_stack.cpp:87:3",
        "    #1 0x55f1c3921ee8 in fuzzer::PrintStackTrace() /home/sam/.cargo/registry/src/index.crates.io-6f17d22bba15001f/libfuzzer-sys-0.4.7/libfuzzer/FuzzerUtil.cpp:210:38",
        "    #2 0x55f1c38f5a43 in fuzzer::Fuzzer::CrashCallback() /home/sam/.cargo/registry/src/index.crates.io-6f17d22bba15001f/libfuzzer-sys-0.4.7/libfuzzer/FuzzerLoop.cpp:231:3",
    ]
    + [
        f"    #{n} 0x55f1c2f{n * 37 % 4096:03x}a1 in kestrel_parser::expr::Parser::expr_bp /home/sam/code/kestrel/kestrel-parser/src/expr.rs:{54 if n % 2 else 36}:{27 if n % 2 else 23}"
        for n in range(3, 203)
    ]
    + [
        "",
        "NOTE: libFuzzer has rudimentary signal handlers.",
        "      Combine libFuzzer with AddressSanitizer or similar for better crash reports.",
        "SUMMARY: libFuzzer: deadly signal",
        "────────────────────────────────────────────────────────────────────────────────",
        "",
        "Failing input:",
        "",
        "\tfuzz/artifacts/parse_expr/crash-5d1e0c4b9a",
        "",
        "Output of `std::fmt::Debug`:",
        "",
        '\t"((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((..."',
        "",
        "Reproduce with:",
        "",
        "\tcargo fuzz run parse_expr fuzz/artifacts/parse_expr/crash-5d1e0c4b9a",
        "",
        "Minimize test case with:",
        "",
        "\tcargo fuzz tmin parse_expr fuzz/artifacts/parse_expr/crash-5d1e0c4b9a",
        "",
        "────────────────────────────────────────────────────────────────────────────────",
        "",
        "Error: Fuzz target exited with exit status: 1",
    ]
)

_TESTS_FAIL = "\n".join(
    [
        "   Compiling kestrel-parser v0.9.1 (/home/sam/code/kestrel/kestrel-parser)",
        "    Finished `test` profile [unoptimized + debuginfo] target(s) in 6.02s",
        "     Running unittests src/lib.rs (target/debug/deps/kestrel_parser-6a0f1e93c2b7d415)",
        "",
        "running 188 tests",
    ]
    + _cargo_tests(302, 188)
    + [
        "",
        "test result: ok. 188 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.04s",
        "",
        "     Running tests/precedence.rs (target/debug/deps/precedence-91c4d2e0b7a3f658)",
        "",
        "running 26 tests",
        "test add_left_assoc ... ok",
        "test and_binds_tighter_than_or ... ok",
        "test comparison_chain_is_left_assoc ... ok",
        "test mul_binds_tighter_than_add ... ok",
        "test not_applies_to_comparison_operand ... ok",
        "test parens_override_precedence ... ok",
        "test pow_is_right_assoc ... ok",
        "test pow_with_negative_exponent ... ok",
        "test rem_same_level_as_mul ... ok",
        "test sub_left_assoc ... ok",
        "test unary_minus_before_mul ... ok",
        "test unary_minus_before_pow ... FAILED",
    ]
    + [f"test table_case_{i:02d} ... ok" for i in range(14)]
    + [
        "",
        "failures:",
        "",
        "---- unary_minus_before_pow stdout ----",
        "thread 'unary_minus_before_pow' panicked at kestrel-parser/tests/precedence.rs:88:5:",
        "assertion `left == right` failed",
        '  left: "(-(2 ** 2))"',
        ' right: "((-2) ** 2)"',
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
        "",
        "",
        "failures:",
        "    unary_minus_before_pow",
        "",
        "test result: FAILED. 25 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s",
        "",
        "error: test failed, to rerun pass `-p kestrel-parser --test precedence`",
    ]
)


def _fuzz_ok() -> str:
    rng = random.Random(303)
    lines = [
        *_cargo_compiling(304, 12),
        "    Finished `release` profile [optimized + debuginfo] target(s) in 9.88s",
        "INFO: Running with entropic power schedule (0xFF, 100).",
        "INFO: Seed: 1187730542",
        "INFO:     1618 files found in /home/sam/code/kestrel/fuzz/corpus/parse_expr",
        "INFO: seed corpus: files: 1618 min: 1b max: 70013b total: 412870b rss: 61Mb",
    ]
    runs, cov, ft, corp = 2048, 2140, 8611, 1618
    while runs < 2_600_000:
        runs = int(runs * rng.uniform(1.05, 1.3))
        cov += rng.randint(0, 2)
        ft += rng.randint(0, 9)
        corp += rng.randint(0, 2)
        kind = rng.choice(["NEW", "REDUCE", "pulse", "REDUCE", "NEW"])
        lines.append(
            f"#{runs}\t{kind}  cov: {cov} ft: {ft} corp: {corp}/96Kb lim: 4096 exec/s: {rng.randint(8100, 9200)} rss: {rng.randint(380, 460)}Mb"
        )
    lines.append(f"Done {runs} runs in 301 second(s)")
    return "\n".join(lines)


E3 = Session(
    "e3-parser-bug",
    [
        U(
            "Two parser issues in kestrel. cargo-fuzz found a crash, input is fuzz/artifacts/parse_expr/crash-5d1e0c4b9a. Separately a user reports that `-2 ** 2` evaluates to 4. Please don't touch the public AST types in kestrel-ast: Ravi Menon maintains the LSP crate and it matches exhaustively on every variant."
        ),
        A(
            "Reproducing the fuzz crash first.",
            Call(
                "Bash",
                {
                    "command": "cargo fuzz run parse_expr fuzz/artifacts/parse_expr/crash-5d1e0c4b9a",
                    "description": "Replay the fuzz crash",
                },
                "Exit code 1\n" + _FUZZ_CRASH,
                error=True,
            ),
        ),
        A(
            "Checking how big the input is and what the parser's recursion looks like.",
            Call(
                "Bash",
                {
                    "command": "wc -c < fuzz/artifacts/parse_expr/crash-5d1e0c4b9a && tr -d '(' < fuzz/artifacts/parse_expr/crash-5d1e0c4b9a | head -c 40",
                    "description": "Size and tail of the crash input",
                },
                "70013\n2" + ")" * 39,
            ),
            Call(
                "Read",
                {"file_path": f"{_KES}/kestrel-parser/src/expr.rs"},
                _numbered(_EXPR_RS),
            ),
            Call(
                "Grep",
                {
                    "pattern": "expr_bp\\(",
                    "path": f"{_KES}/kestrel-parser/src",
                    "output_mode": "content",
                    "-n": True,
                },
                "\n".join(
                    f"{_KES}/kestrel-parser/src/expr.rs:{n}:{line}"
                    for n, line in enumerate(_EXPR_RS, 1)
                    if "expr_bp(" in line
                )
                + f"\n{_KES}/kestrel-parser/src/stmt.rs:73:        let value = self.expr_bp(0)?;\n{_KES}/kestrel-parser/src/stmt.rs:118:        let cond = self.expr_bp(0)?;",
            ),
        ),
        A(
            "Both bugs come from the same Pratt loop. In parse_prefix, unary minus parses its operand at binding power 17, which is above the left power of `**` (16), so `-2 ** 2` groups as `(-2) ** 2`. And nothing bounds the recursion: every `(` re-enters expr_bp, so an input of roughly seventy thousand open parentheses exhausts the stack."
        ),
        A(
            "Let me see where that 17 came from.",
            Call(
                "Bash",
                {
                    "command": "git log -S'expr_bp(17)' --format='%h %an %ad %s' --date=short -- kestrel-parser/src/expr.rs",
                    "description": "Find the commit that introduced the binding power",
                },
                "a41c9e2 Sam Ortiz 2024-02-19 parser: fold unary operators into the Pratt table",
            ),
        ),
        U(
            "What should `-2 ** 2` give? Do whatever Python does, people paste formulas straight from notebooks."
        ),
        A(
            "Python says -4: `**` binds tighter than a unary minus on its left, while `2 ** -1` still works because the right operand may itself be unary. So the prefix minus gets binding power 13, between `*` and `**`, which makes kestrel match Python. For the crash I'll add a nesting limit rather than rewriting the loop around an explicit stack; the limit is a few lines and keeps our error spans, where an explicit-stack rewrite would touch every parse function.",
            Call(
                "MultiEdit",
                {
                    "file_path": f"{_KES}/kestrel-parser/src/expr.rs",
                    "edits": [
                        {
                            "old_string": "pub struct Parser<'src> {\n    tokens: Vec<Token<'src>>,\n    pos: usize,\n}",
                            "new_string": "/// Deepest parenthesised nesting accepted before ParseError::TooDeep.\npub const MAX_NESTING: usize = 256;\n/// Below `**`'s left power so -2 ** 2 == -(2 ** 2), as in Python.\nconst PREFIX_NEG_BP: u8 = 13;\n\npub struct Parser<'src> {\n    tokens: Vec<Token<'src>>,\n    pos: usize,\n    depth: usize,\n}",
                        },
                        {
                            "old_string": "            TokenKind::Minus => {\n                let operand = self.expr_bp(17)?;",
                            "new_string": "            TokenKind::Minus => {\n                let operand = self.expr_bp(PREFIX_NEG_BP)?;",
                        },
                        {
                            "old_string": "            TokenKind::LParen => {\n                let inner = self.expr_bp(0)?;\n                self.expect(TokenKind::RParen)?;",
                            "new_string": "            TokenKind::LParen => {\n                self.depth += 1;\n                if self.depth > MAX_NESTING {\n                    return Err(ParseError::TooDeep { limit: MAX_NESTING, span: tok.span });\n                }\n                let inner = self.expr_bp(0)?;\n                self.depth -= 1;\n                self.expect(TokenKind::RParen)?;",
                        },
                        {
                            "old_string": "        Self { tokens, pos: 0 }",
                            "new_string": "        Self { tokens, pos: 0, depth: 0 }",
                        },
                    ],
                },
                f"Applied 4 edits to {_KES}/kestrel-parser/src/expr.rs:\n"
                + '1. Replaced "pub struct Parser<\'src> {\n    tokens: Vec<Token<\'src>>,..." with "/// Deepest parenthesised nesting accepted before Pa..."\n2. Replaced "            TokenKind::Minus => {\n                l..." with "            TokenKind::Minus => {\n                l..."\n3. Replaced "            TokenKind::LParen => {\n                ..." with "            TokenKind::LParen => {\n                ..."\n4. Replaced "        Self { tokens, pos: 0 }" with "        Self { tokens, pos: 0, depth: 0 }"',
            ),
            Call(
                "Edit",
                {
                    "file_path": f"{_KES}/kestrel-parser/src/error.rs",
                    "old_string": '    #[error("unexpected {found}")]\n    Unexpected { found: String, span: Span },',
                    "new_string": '    #[error("unexpected {found}")]\n    Unexpected { found: String, span: Span },\n    #[error("expression nested deeper than {limit} levels")]\n    TooDeep { limit: usize, span: Span },',
                },
                f"The file {_KES}/kestrel-parser/src/error.rs has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n"
                + _numbered(
                    [
                        '    #[error("unexpected {found}")]',
                        "    Unexpected { found: String, span: Span },",
                        '    #[error("expression nested deeper than {limit} levels")]',
                        "    TooDeep { limit: usize, span: Span },",
                    ],
                    14,
                ),
            ),
        ),
        A(
            "Running the parser's test suite.",
            Call(
                "Bash",
                {"command": "cargo test -p kestrel-parser", "description": "Run the parser tests"},
                "Exit code 101\n" + _TESTS_FAIL,
                error=True,
            ),
        ),
        A(
            "That test pinned the old grouping; flipping its expectation is the point of the fix. I'm also adding a regression test for the crash input.",
            Call(
                "Edit",
                {
                    "file_path": f"{_KES}/kestrel-parser/tests/precedence.rs",
                    "old_string": '    assert_eq!(grouped("-2 ** 2"), "((-2) ** 2)");',
                    "new_string": '    assert_eq!(grouped("-2 ** 2"), "(-(2 ** 2))");',
                },
                f"The file {_KES}/kestrel-parser/tests/precedence.rs has been updated.",
            ),
            Call(
                "Write",
                {
                    "file_path": f"{_KES}/kestrel-parser/tests/nesting.rs",
                    "content": 'use kestrel_parser::{parse_expr, ParseError, MAX_NESTING};\n\n#[test]\nfn deep_parens_are_an_error_not_a_crash() {\n    let src = format!("{}2{}", "(".repeat(70_000), ")".repeat(70_000));\n    assert!(matches!(parse_expr(&src), Err(ParseError::TooDeep { .. })));\n}\n\n#[test]\nfn nesting_up_to_the_limit_parses() {\n    let src = format!("{}2{}", "(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING));\n    assert!(parse_expr(&src).is_ok());\n}\n',
                },
                f"File created successfully at: {_KES}/kestrel-parser/tests/nesting.rs",
            ),
            Call(
                "Bash",
                {
                    "command": "cargo test -p kestrel-parser 2>&1 | grep -E '^test result|FAILED|panicked'",
                    "description": "Re-run the parser tests",
                },
                "test result: ok. 188 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.04s\ntest result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.31s\ntest result: ok. 26 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s",
            ),
        ),
        U(
            "Ravi says the configs terraform-to-kestrel generates for big modules nest around 300 levels deep, so 256 would break them. Bump it."
        ),
        A(
            "Raised to 512, which clears the generator's ~300 with room to spare and is still nowhere near the depth that overflows a 2 MiB thread stack.",
            Call(
                "Edit",
                {
                    "file_path": f"{_KES}/kestrel-parser/src/expr.rs",
                    "old_string": "pub const MAX_NESTING: usize = 256;",
                    "new_string": "pub const MAX_NESTING: usize = 512;",
                },
                f"The file {_KES}/kestrel-parser/src/expr.rs has been updated.",
            ),
        ),
        A(
            "Fuzzing for five minutes on the fixed parser.",
            Call(
                "Bash",
                {
                    "command": "cargo fuzz run parse_expr -- -max_total_time=300",
                    "description": "Fuzz the parser for 5 minutes",
                    "timeout": 420000,
                },
                _fuzz_ok(),
            ),
        ),
        U(
            "Ines is our release manager, she cuts 0.9.2 from main on Thursday, so this has to be merged before then. And mind the MSRV, don't use anything newer than what Cargo.toml allows."
        ),
        A(
            "Checking the declared MSRV and building the parser with that toolchain.",
            Call(
                "Bash",
                {
                    "command": "grep -n 'rust-version' Cargo.toml kestrel-parser/Cargo.toml",
                    "description": "Declared MSRV",
                },
                'Cargo.toml:9:rust-version = "1.74"\nkestrel-parser/Cargo.toml:6:rust-version.workspace = true',
            ),
            Call(
                "Bash",
                {
                    "command": "cargo +$(sed -n 's/^rust-version = \"\\(.*\\)\"/\\1/p' Cargo.toml) check -p kestrel-parser --all-targets",
                    "description": "Check with the MSRV toolchain",
                },
                "    Checking kestrel-ast v0.9.1 (/home/sam/code/kestrel/kestrel-ast)\n    Checking kestrel-parser v0.9.1 (/home/sam/code/kestrel/kestrel-parser)\n    Finished dev [unoptimized + debuginfo] target(s) in 4.81s",
            ),
        ),
        A(
            "It builds on the MSRV toolchain; nothing in the change needs a newer compiler. Next: open the PR and ask Ravi to check that the LSP doesn't need to handle TooDeep specially."
        ),
    ],
    [
        Fact("constraint", ("kestrel-ast",), "public AST types stay unchanged"),
        Fact("person", ("Ravi Menon", "LSP"), "who maintains the LSP crate"),
        Fact("tool_output", ("stack overflow",), "what the fuzz crash is"),
        Fact("conclusion", ("parse_prefix",), "where both bugs live"),
        Fact("tool_output", ("a41c9e2",), "commit that brought in the binding power"),
        Fact("decision", ("-4", "Python"), "-2 ** 2 follows Python"),
        Fact("decision", ("nesting limit", "explicit stack"), "a limit, not a rewrite, and why"),
        Fact("number", ("MAX_NESTING", "512"), "the limit after 256 proved too low"),
        Fact("tool_output", ("unary_minus_before_pow",), "the test that failed"),
        Fact("path", ("kestrel-parser/src/expr.rs",), "file fixed"),
        Fact("path", ("tests/nesting.rs",), "new regression test"),
        Fact("person", ("Ines", "release manager"), "who cuts the release"),
        Fact("constraint", ("0.9.2",), "merge before the 0.9.2 cut"),
        Fact("number", ("1.74",), "MSRV from Cargo.toml"),
    ],
)


# -- e4: a mobile app release, Codex exec_command calls ----------------------------------------

_APP = "/Users/lena/work/fieldnote"


def _ex(cmd: str, wait: int = 10000) -> dict[str, object]:
    return {"cmd": cmd, "workdir": _APP, "yield_time_ms": wait, "max_output_tokens": 12000}


_GRADLE_FAIL = "\n".join(
    [
        "> Configure project :app",
        "Reading env from: .env.production",
        "> Configure project :react-native-reanimated",
        "Android gradle plugin: 8.1.1",
        "Gradle: 8.3",
        *_gradle(401, 150),
        "",
        "> Task :app:lintVitalAnalyzeRelease FAILED",
        f"{_APP}/android/app/src/main/AndroidManifest.xml:52: Error: To call Service.startForeground(), the <service> element of manifest file must have the foregroundServiceType attribute specified [ForegroundServiceType]",
        "        <service",
        "         ~~~~~~~",
        "",
        '   Explanation for issues of type "ForegroundServiceType":',
        "   For targetSdkVersion >= 34, to call Service.startForeground(), the <service>",
        "   element in the manifest file must have the foregroundServiceType attribute",
        "   specified.",
        "",
        "1 errors, 0 warnings (37 warnings filtered by baseline lint-baseline.xml)",
        "",
        *_gradle(402, 130),
        "",
        "FAILURE: Build failed with an exception.",
        "",
        "* What went wrong:",
        "Execution failed for task ':app:lintVitalAnalyzeRelease'.",
        "> Lint found errors in the project; aborting build.",
        "",
        "* Try:",
        "> Run with --stacktrace option to get the stack trace.",
        "> Run with --info or --debug option to get more log output.",
        "",
        "BUILD FAILED in 3m 41s",
        "389 actionable tasks: 112 executed, 277 up-to-date",
    ]
)

_GRADLE_OK = "\n".join(
    [
        "> Configure project :app",
        "Reading env from: .env.production",
        *_gradle(403, 260),
        "> Task :app:lintVitalAnalyzeRelease",
        "> Task :app:bundleRelease",
        "",
        "BUILD SUCCESSFUL in 4m 12s",
        "389 actionable tasks: 97 executed, 292 up-to-date",
    ]
)

_MANIFEST = "\n".join(
    [
        '<manifest xmlns:android="http://schemas.android.com/apk/res/android"',
        '    xmlns:tools="http://schemas.android.com/tools">',
        "",
    ]
    + [
        f'    <uses-permission android:name="android.permission.{p}" />'
        for p in (
            "INTERNET",
            "ACCESS_NETWORK_STATE",
            "ACCESS_FINE_LOCATION",
            "ACCESS_COARSE_LOCATION",
            "ACCESS_BACKGROUND_LOCATION",
            "FOREGROUND_SERVICE",
            "POST_NOTIFICATIONS",
            "CAMERA",
            "READ_MEDIA_IMAGES",
            "VIBRATE",
            "WAKE_LOCK",
            "RECEIVE_BOOT_COMPLETED",
        )
    ]
    + [
        "",
        "    <application",
        '        android:name=".MainApplication"',
        '        android:label="@string/app_name"',
        '        android:icon="@mipmap/ic_launcher"',
        '        android:roundIcon="@mipmap/ic_launcher_round"',
        '        android:allowBackup="false"',
        '        android:theme="@style/AppTheme">',
        "        <activity",
        '            android:name=".MainActivity"',
        '            android:label="@string/app_name"',
        '            android:configChanges="keyboard|keyboardHidden|orientation|screenLayout|screenSize|smallestScreenSize|uiMode"',
        '            android:launchMode="singleTask"',
        '            android:windowSoftInputMode="adjustResize"',
        '            android:exported="true">',
        "            <intent-filter>",
        '                <action android:name="android.intent.action.MAIN" />',
        '                <category android:name="android.intent.category.LAUNCHER" />',
        "            </intent-filter>",
        "            <intent-filter>",
        '                <action android:name="android.intent.action.VIEW" />',
        '                <category android:name="android.intent.category.DEFAULT" />',
        '                <category android:name="android.intent.category.BROWSABLE" />',
        '                <data android:scheme="fieldnote" />',
        "            </intent-filter>",
        "        </activity>",
        "",
        '        <service android:name=".tracking.TrackRecorderService" android:exported="false" />',
        "        <service",
        '            android:name="androidx.work.impl.foreground.SystemForegroundService"',
        '            android:foregroundServiceType="dataSync"',
        '            tools:node="merge" />',
        "",
        '        <receiver android:name=".tracking.BootReceiver" android:exported="false">',
        "            <intent-filter>",
        '                <action android:name="android.intent.action.BOOT_COMPLETED" />',
        "            </intent-filter>",
        "        </receiver>",
        "",
        '        <meta-data android:name="com.google.android.geo.API_KEY" android:value="@string/maps_api_key" />',
        "        <provider",
        '            android:name="androidx.core.content.FileProvider"',
        '            android:authorities="${applicationId}.fileprovider"',
        '            android:exported="false"',
        '            android:grantUriPermissions="true">',
        '            <meta-data android:name="android.support.FILE_PROVIDER_PATHS" android:resource="@xml/file_paths" />',
        "        </provider>",
        "    </application>",
        "</manifest>",
    ]
)

_APP_GRADLE = "\n".join(
    [
        "android {",
        "    ndkVersion rootProject.ext.ndkVersion",
        "    buildToolsVersion rootProject.ext.buildToolsVersion",
        "    compileSdk rootProject.ext.compileSdkVersion",
        "",
        '    namespace "com.fieldnote.app"',
        "    defaultConfig {",
        '        applicationId "com.fieldnote.app"',
        "        minSdkVersion rootProject.ext.minSdkVersion",
        "        targetSdkVersion rootProject.ext.targetSdkVersion",
        "        versionCode 412000",
        '        versionName "4.12.0"',
        '        resValue "string", "build_config_package", "com.fieldnote.app"',
        "    }",
        "    signingConfigs {",
        "        release {",
        "            storeFile file(FIELDNOTE_UPLOAD_STORE_FILE)",
        "            storePassword System.getenv('FIELDNOTE_UPLOAD_STORE_PASSWORD')",
        "            keyAlias FIELDNOTE_UPLOAD_KEY_ALIAS",
        "            keyPassword System.getenv('FIELDNOTE_UPLOAD_KEY_PASSWORD')",
        "        }",
        "    }",
        "    buildTypes {",
        "        debug {",
        "            signingConfig signingConfigs.debug",
        "        }",
        "        release {",
        "            signingConfig signingConfigs.release",
        "            minifyEnabled enableProguardInReleaseBuilds",
        '            proguardFiles getDefaultProguardFile("proguard-android.txt"), "proguard-rules.pro"',
        "        }",
        "    }",
        "    packagingOptions {",
        '        pickFirst "lib/**/libc++_shared.so"',
        "    }",
        "}",
    ]
)

_CRASHES = "\n".join(
    [
        "Fieldnote android 4.12.0-rc1 (internal testing), last 7 days, top 8 by users",
        "",
        "rank  events  users  issue",
        "   1   4,102  1,911  java.lang.OutOfMemoryError: Failed to allocate a 33177612 byte allocation",
        "                     top frame: com.fieldnote.app.photos.ThumbnailCache.decode (ThumbnailCache.kt:118)",
        "                     os: Android 12 41%, Android 13 33%, Android 14 26%",
        "   2   3,388  1,540  com.facebook.react.common.JavascriptException: TypeError: Cannot read property 'bbox' of undefined",
        "                     top frame: index.android.bundle:1:883412",
        "                     os: Android 13 38%, Android 14 35%, Android 12 27%",
        "   3   2,911  1,387  android.app.MissingForegroundServiceTypeException: Starting FGS without a type callerApp=ProcessRecord{8b1e3f0 24611:com.fieldnote.app/u0a311} targetSDK=34",
        "                     top frame: com.fieldnote.app.tracking.TrackRecorderService.startTracking (TrackRecorderService.kt:71)",
        "                     os: Android 14 100%",
        "   4   1,207    988  java.lang.IllegalStateException: Fragment already added: MapSnapshotFragment",
        "                     top frame: androidx.fragment.app.FragmentStore.addFragment (FragmentStore.java:93)",
        "                     os: Android 11 52%, Android 12 48%",
        "   5     804    612  android.database.sqlite.SQLiteDatabaseLockedException: database is locked (code 5 SQLITE_BUSY)",
        "                     top frame: com.fieldnote.app.db.NotesDao_Impl.insertAll (NotesDao_Impl.java:210)",
        "                     os: Android 13 44%, Android 14 31%, Android 12 25%",
        "   6     611    540  java.net.SocketTimeoutException: timeout",
        "                     top frame: okhttp3.internal.http2.Http2Stream$StreamTimeout.newTimeoutException (Http2Stream.kt:675)",
        "                     os: Android 14 40%, Android 13 39%, Android 12 21%",
        "   7     402    377  java.lang.NullPointerException: Attempt to invoke virtual method 'int android.location.Location.getAccuracy()' on a null object reference",
        "                     top frame: com.fieldnote.app.tracking.Smoother.push (Smoother.kt:44)",
        "                     os: Android 13 58%, Android 14 42%",
        "   8     219    190  android.view.WindowManager$BadTokenException: Unable to add window -- token null is not valid",
        "                     top frame: com.fieldnote.app.ui.Toasts.show (Toasts.kt:22)",
        "                     os: Android 10 63%, Android 11 37%",
    ]
)

_MANIFEST_PATCH = """*** Begin Patch
*** Update File: android/app/src/main/AndroidManifest.xml
@@
     <uses-permission android:name="android.permission.FOREGROUND_SERVICE" />
+    <uses-permission android:name="android.permission.FOREGROUND_SERVICE_LOCATION" />
@@
-        <service android:name=".tracking.TrackRecorderService" android:exported="false" />
+        <service
+            android:name=".tracking.TrackRecorderService"
+            android:exported="false"
+            android:foregroundServiceType="location" />
*** Update File: android/app/src/main/java/com/fieldnote/app/tracking/TrackRecorderService.kt
@@ fun startTracking(notification: Notification) {
-        startForeground(NOTIFICATION_ID, notification)
+        ServiceCompat.startForeground(
+            this,
+            NOTIFICATION_ID,
+            notification,
+            ServiceInfo.FOREGROUND_SERVICE_TYPE_LOCATION,
+        )
*** End Patch"""

_FASTLANE_ANDROID_FAIL = "\n".join(
    [
        "[✔] 🚀 ",
        "[15:02:09]: ------------------------------",
        "[15:02:09]: --- Step: default_platform ---",
        "[15:02:09]: ------------------------------",
        "[15:02:09]: Driving the lane 'android internal' 🚀",
        "[15:02:10]: -----------------------------------",
        "[15:02:10]: --- Step: upload_to_play_store ---",
        "[15:02:10]: -----------------------------------",
        "[15:02:11]: Preparing aab at path 'android/app/build/outputs/bundle/release/app-release.aab' for upload...",
        "[15:02:11]: Preparing to upload for language 'en-US'...",
        "[15:03:40]: Google Api Error: Invalid request - APK specifies a version code that has already been used.",
        "+------------------------------------------+",
        "|             Lane Context                 |",
        "+----------------------+-------------------+",
        "| DEFAULT_PLATFORM     | android           |",
        "| PLATFORM_NAME        | android           |",
        "| LANE_NAME            | android internal  |",
        "+----------------------+-------------------+",
        "[15:03:40]: Google Api Error: Invalid request - APK specifies a version code that has already been used.",
        "",
        "[!] Google Api Error: Invalid request - APK specifies a version code that has already been used.",
    ]
)


def _fastlane_ios_fail() -> str:
    return "\n".join(
        [
            "[16:02:31]: Driving the lane 'ios beta' 🚀",
            "[16:02:31]: --- Step: build_app ---",
            "[16:02:32]: $ set -o pipefail && xcodebuild -workspace ./Fieldnote.xcworkspace -scheme Fieldnote -configuration Release -destination 'generic/platform=iOS' -archivePath ./build/Fieldnote.xcarchive archive | tee ~/Library/Logs/gym/Fieldnote-Fieldnote.log | xcpretty",
            *_xcodebuild(404, 240),
            "▸ Linking Fieldnote",
            "▸ Generating 'Fieldnote.app.dSYM'",
            "▸ Archive Succeeded",
            "[16:19:58]: Successfully stored the archive. You can find it in the Xcode Organizer.",
            "[16:20:40]: Successfully exported and compressed dSYM file",
            "[16:20:41]: Successfully exported and signed the ipa file:",
            f"[16:20:41]: {_APP}/ios/Fieldnote.ipa",
            "[16:20:41]: --- Step: upload_to_testflight ---",
            "[16:20:44]: Ready to upload new build to TestFlight (App: 1580244137)...",
            "[16:20:44]: Going to upload updated app to App Store Connect",
            "[16:20:44]: This might take a few minutes. Please don't interrupt the script.",
            '[16:31:02]: [Transporter Error Output]: ERROR ITMS-90683: "Missing purpose string in Info.plist. Your app\'s code references one or more APIs that access sensitive user data, or the app has one or more entitlements that permit such access. The Info.plist file for the "Fieldnote.app" bundle should contain a NSLocationAlwaysAndWhenInUseUsageDescription key with a user-facing purpose string explaining clearly and completely why your app needs the data."',
            "[16:31:02]: Transporter transfer failed.",
            "[16:31:02]: Error uploading ipa file: ",
            "[!] Error uploading ipa file: ",
        ]
    )


_PLIST_PATCH = """*** Begin Patch
*** Update File: ios/Fieldnote/Info.plist
@@
 \t<key>NSLocationWhenInUseUsageDescription</key>
 \t<string>Fieldnote uses your location to place notes on the map.</string>
+\t<key>NSLocationAlwaysAndWhenInUseUsageDescription</key>
+\t<string>TODO(diego): Fieldnote records your track in the background while a hike is running.</string>
*** End Patch"""

E4 = Session(
    "e4-mobile-release",
    [
        U(
            "Fieldnote 4.12.0 is stuck in both stores: Play Console rejected the bundle, TestFlight processing failed, and since the targetSdk bump the local Android release build is red as well. Can you get both platforms green? Priya Raman is our QA lead and signs off the release candidate; nothing goes to a production track without her go. And no React Native upgrade in this release, we stay on 0.73.6."
        ),
        A(
            "Starting with the Android release build.",
            Call(
                "exec_command",
                _ex(
                    "cd android && ./gradlew :app:bundleRelease --console=plain --continue", 300000
                ),
                _unified(_GRADLE_FAIL, code=1, seconds=221.4, chunk="a17c03"),
            ),
        ),
        A(
            "Lint vital stops the release build over the tracking service. Looking at the manifest and the app's Gradle config, plus rc1's crash list.",
            Call(
                "exec_command",
                _ex("sed -n '1,140p' android/app/src/main/AndroidManifest.xml"),
                _unified(_MANIFEST, seconds=0.02, chunk="b2913e"),
            ),
            Call(
                "exec_command",
                _ex("sed -n '78,114p' android/app/build.gradle"),
                _unified(_APP_GRADLE, seconds=0.01, chunk="c0d4a8"),
            ),
            Call(
                "exec_command",
                _ex("python3 scripts/crash_top.py --platform android --version 4.12.0-rc1 --top 8"),
                _unified(_CRASHES, seconds=3.8, chunk="d71e55"),
            ),
        ),
        A(
            "These are one bug seen three ways: the lint failure, Play's rejection and rc1's third crash all come from TrackRecorderService going foreground without a declared type, which Android 14 refuses once an app targets SDK 34."
        ),
        A(
            "I'm declaring it a location service rather than dataSync: the recorder follows GPS for a whole hike, and dataSync foreground services get stopped after 6 hours on Android 15.",
            Call(
                "apply_patch",
                {"input": _MANIFEST_PATCH},
                _patched(
                    "android/app/src/main/AndroidManifest.xml",
                    "android/app/src/main/java/com/fieldnote/app/tracking/TrackRecorderService.kt",
                ),
            ),
        ),
        A(
            "Rebuilding the bundle, then trying the internal track upload.",
            Call(
                "exec_command",
                _ex(
                    "cd android && ./gradlew :app:bundleRelease --console=plain --continue", 300000
                ),
                _unified(_GRADLE_OK, seconds=252.0, chunk="e4402b"),
            ),
            Call(
                "exec_command",
                _ex("bundle exec fastlane android internal", 300000),
                _unified(_FASTLANE_ANDROID_FAIL, code=1, seconds=91.3, chunk="f00c19"),
            ),
        ),
        A(
            "The build is green, but Play won't take the upload: rc1 already used versionCode 412000 on the internal track and a code can never be reused. Bumping it by one and uploading again.",
            Call(
                "apply_patch",
                {
                    "input": "*** Begin Patch\n*** Update File: android/app/build.gradle\n@@ defaultConfig {\n-        versionCode 412000\n+        versionCode 412001\n*** End Patch"
                },
                _patched("android/app/build.gradle"),
            ),
            Call(
                "exec_command",
                _ex(
                    "cd android && ./gradlew :app:bundleRelease --console=plain -q && cd .. && bundle exec fastlane android internal",
                    600000,
                ),
                _unified(
                    "[15:21:40]: Driving the lane 'android internal' 🚀\n"
                    "[15:21:41]: --- Step: upload_to_play_store ---\n"
                    "[15:21:42]: Preparing aab at path 'android/app/build/outputs/bundle/release/app-release.aab' for upload...\n"
                    "[15:23:05]: Updating track 'internal'...\n"
                    "[15:23:07]: Successfully finished the upload to Google Play\n"
                    "[15:23:07]: fastlane.tools finished successfully 🎉",
                    seconds=344.7,
                    chunk="0a9f62",
                ),
            ),
        ),
        U(
            "When Priya gives the go, Android goes out as a staged rollout starting at 5%. Don't go straight to 100."
        ),
        A(
            "Noted. Now the iOS side.",
            Call(
                "exec_command",
                _ex("bundle exec fastlane ios beta", 1800000),
                _unified(_fastlane_ios_fail(), code=1, seconds=1711.0, chunk="1bd7e0"),
            ),
        ),
        A(
            "The archive itself is fine. App Store Connect turned the upload away because the background tracking needs an always-on location permission and Info.plist has no purpose string for it."
        ),
        U(
            "Diego Alvarez does our iOS work and is writing the wording for that prompt. Put in a placeholder he can swap out."
        ),
        A(
            "Adding a placeholder string marked for Diego, bumping the build number and uploading again.",
            Call(
                "apply_patch",
                {"input": _PLIST_PATCH},
                _patched("ios/Fieldnote/Info.plist"),
            ),
            Call(
                "exec_command",
                _ex("cd ios && agvtool next-version -all"),
                _unified(
                    'Setting version of project Fieldnote to: \n    1188.\n\nAlso setting CFBundleVersion key (assuming it exists)\n\nUpdating CFBundleVersion in Info.plist(s)...\n\nUpdated CFBundleVersion in "Fieldnote.xcodeproj/../Fieldnote/Info.plist" to 1188\nUpdated CFBundleVersion in "Fieldnote.xcodeproj/../FieldnoteWidget/Info.plist" to 1188',
                    seconds=0.6,
                    chunk="2c83f1",
                ),
            ),
            Call(
                "exec_command",
                _ex("bundle exec fastlane ios beta", 1800000),
                _unified(
                    "\n".join(
                        [
                            *_xcodebuild(405, 60),
                            "▸ Archive Succeeded",
                            "[17:04:12]: Successfully exported and signed the ipa file:",
                            "[17:15:40]: Successfully uploaded package to App Store Connect. It might take a few minutes until it's visible online.",
                            "[17:15:40]: Successfully uploaded the new binary to App Store Connect",
                            "[17:15:41]: fastlane.tools finished successfully 🎉",
                        ]
                    ),
                    seconds=1502.2,
                    chunk="3e5d90",
                ),
            ),
        ),
        A(
            "Both platforms have 4.12.0 up: Android on the internal track, iOS processing in TestFlight. Still open: Priya's sign-off before the staged production rollout, and Diego's wording replacing the placeholder."
        ),
    ],
    [
        Fact("person", ("Priya Raman", "QA lead"), "who signs off the release candidate"),
        Fact("constraint", ("React Native", "0.73.6"), "no React Native upgrade"),
        Fact("tool_output", ("lintVitalAnalyzeRelease",), "the Gradle task that failed"),
        Fact("number", ("1,387",), "users hit by the foreground-service crash"),
        Fact(
            "conclusion",
            ("TrackRecorderService", "Android 14"),
            "lint, Play and the crash are one bug",
        ),
        Fact("decision", ("location", "6 hours"), "location type, not dataSync, and why"),
        Fact("number", ("412001",), "versionCode after 412000 was already used"),
        Fact("constraint", ("staged rollout", "5%"), "how Android goes to production"),
        Fact("tool_output", ("ITMS-90683",), "the App Store Connect rejection"),
        Fact("person", ("Diego Alvarez", "iOS"), "who writes the location prompt"),
        Fact("number", ("1188",), "iOS build number"),
        Fact("path", ("AndroidManifest.xml",), "manifest edited"),
        Fact("path", ("TrackRecorderService.kt",), "service edited"),
        Fact("path", ("ios/Fieldnote/Info.plist",), "plist edited"),
    ],
)


# -- e5: a billing time-zone bug, Codex shell calls with JSON results -------------------------

_INV = "/srv/work/invoicer"


def _argv(script: str) -> dict[str, object]:
    return {"command": ["bash", "-lc", script], "workdir": _INV, "timeout_ms": 60000}


def _invoices() -> str:
    rng = random.Random(501)
    planted = [
        " INV-2024-03-61359 |       88120 | Australia/Sydney    | 2024-03-31 13:00:00+00 |       41250 | 2024-04-01 00:14:09+00",
        " INV-2024-03-70744 |       88120 | Australia/Sydney    | 2024-03-31 14:00:00+00 |       41250 | 2024-04-08 02:03:51+00",
    ]
    out: list[str] = []
    for i, row in enumerate(_invoice_rows(502, 250)):
        if planted and int(row.split("|")[1]) > 88120:
            out += planted
            planted = []
        out.append(row)
        if "13:00:00" in row and rng.random() < 0.3:
            out.append(
                row.replace("13:00:00+00", "14:00:00+00", 1)
                .replace(row.split("|", 1)[0].strip(), f"INV-2024-03-{70400 + i * 3:05d}")
                .replace("2024-04-01 00:", "2024-04-08 02:")
            )
    header = [
        "        id         | customer_id |      timezone       |       period_end       | total_cents |       created_at",
        "-------------------+-------------+---------------------+------------------------+-------------+------------------------",
    ]
    return "\n".join([*header, *out, f"({len(out)} rows)"])


_PERIOD_GO = "\n".join(
    [
        "package billing",
        "",
        "import (",
        '\t"fmt"',
        '\t"time"',
        ")",
        "",
        "// Period is one billing cycle, half-open: [Start, End).",
        "type Period struct {",
        "\tStart time.Time",
        "\tEnd   time.Time",
        "}",
        "",
        "func (p Period) String() string {",
        '\treturn fmt.Sprintf("%s..%s", p.Start.Format(time.RFC3339), p.End.Format(time.RFC3339))',
        "}",
        "",
    ]
    + [
        line
        for name in ("Days", "Hours", "Contains", "Overlaps", "Prorate", "Shift", "Clamp")
        for line in (
            f"// {name} is used by the proration and usage-tier code.",
            f"func (p Period) {name}(t time.Time) bool {{",
            "\tif t.Before(p.Start) {",
            "\t\treturn false",
            "\t}",
            "\treturn t.Before(p.End)",
            "}",
            "",
        )
    ]
    + [
        "// zoneAt pins the customer's zone to its current offset, so period math is plain arithmetic.",
        "func zoneAt(loc *time.Location, now time.Time) *time.Location {",
        "\tname, offset := now.In(loc).Zone()",
        "\treturn time.FixedZone(name, offset)",
        "}",
        "",
        "// MonthlyPeriod returns the calendar month before now, in the customer's zone.",
        "func MonthlyPeriod(loc *time.Location, now time.Time) Period {",
        "\tz := zoneAt(loc, now)",
        "\tlocal := now.In(z)",
        "\tend := time.Date(local.Year(), local.Month(), 1, 0, 0, 0, 0, z)",
        "\tstart := end.AddDate(0, -1, 0)",
        "\treturn Period{Start: start.UTC(), End: end.UTC()}",
        "}",
    ]
)

_IDEMPOTENCY_GO = "\n".join(
    [
        "package billing",
        "",
        "import (",
        '\t"fmt"',
        '\t"time"',
        ")",
        "",
        "// Key identifies an invoice, so that a re-run never bills a customer twice for one period.",
        "func Key(customerID int64, p Period) string {",
        '\treturn fmt.Sprintf("%d:%s", customerID, p.End.Format(time.RFC3339))',
        "}",
    ]
)

_TEST_PATCH = """*** Begin Patch
*** Add File: internal/billing/period_test.go
+package billing
+
+import (
+\t"testing"
+\t"time"
+)
+
+func TestPeriodBoundsAcrossDST(t *testing.T) {
+\tfor _, zone := range []string{"Australia/Sydney", "Australia/Melbourne", "Australia/Brisbane"} {
+\t\tt.Run(zone, func(t *testing.T) {
+\t\t\tloc, _ := time.LoadLocation(zone)
+\t\t\tfirst := MonthlyPeriod(loc, time.Date(2024, 4, 1, 9, 0, 0, 0, loc))
+\t\t\tlater := MonthlyPeriod(loc, time.Date(2024, 4, 8, 9, 0, 0, 0, loc))
+\t\t\tif !first.End.Equal(later.End) {
+\t\t\t\tt.Errorf("MonthlyPeriod end moved: %s then %s", first.End, later.End)
+\t\t\t}
+\t\t\tif Key(88120, first) != Key(88120, later) {
+\t\t\t\tt.Errorf("Key changed between runs")
+\t\t\t}
+\t\t})
+\t}
+}
*** End Patch"""

_FIX_PATCH = """*** Begin Patch
*** Update File: internal/billing/period.go
@@
-// zoneAt pins the customer's zone to its current offset, so period math is plain arithmetic.
-func zoneAt(loc *time.Location, now time.Time) *time.Location {
-\tname, offset := now.In(loc).Zone()
-\treturn time.FixedZone(name, offset)
-}
-
 // MonthlyPeriod returns the calendar month before now, in the customer's zone.
 func MonthlyPeriod(loc *time.Location, now time.Time) Period {
-\tz := zoneAt(loc, now)
-\tlocal := now.In(z)
-\tend := time.Date(local.Year(), local.Month(), 1, 0, 0, 0, 0, z)
-\tstart := end.AddDate(0, -1, 0)
+\t// Midnight on the 1st in the real location: right on either side of a DST change.
+\tlocal := now.In(loc)
+\tend := time.Date(local.Year(), local.Month(), 1, 0, 0, 0, 0, loc)
+\tstart := time.Date(local.Year(), local.Month()-1, 1, 0, 0, 0, 0, loc)
 \treturn Period{Start: start.UTC(), End: end.UTC()}
 }
+
+// Month is the billing month a period covers, as the customer sees it ("2024-03").
+func (p Period) Month(loc *time.Location) string {
+\treturn p.Start.In(loc).Format("2006-01")
+}
*** Update File: internal/billing/idempotency.go
@@
-// Key identifies an invoice, so that a re-run never bills a customer twice for one period.
-func Key(customerID int64, p Period) string {
-\treturn fmt.Sprintf("%d:%s", customerID, p.End.Format(time.RFC3339))
+// Key identifies an invoice by customer and billing month, which no offset change can move.
+func Key(customerID int64, p Period, loc *time.Location) string {
+\treturn fmt.Sprintf("%d:%s", customerID, p.Month(loc))
 }
*** End Patch"""


def _go_test_output(failing: bool) -> str:
    lines = _go_tests(503, 70)
    if failing:
        lines += [
            "=== RUN   TestPeriodBoundsAcrossDST",
            "=== RUN   TestPeriodBoundsAcrossDST/Australia/Sydney",
            "    period_test.go:15: MonthlyPeriod end moved: 2024-03-31 13:00:00 +0000 UTC then 2024-03-31 14:00:00 +0000 UTC",
            "    period_test.go:18: Key changed between runs",
            "=== RUN   TestPeriodBoundsAcrossDST/Australia/Melbourne",
            "    period_test.go:15: MonthlyPeriod end moved: 2024-03-31 13:00:00 +0000 UTC then 2024-03-31 14:00:00 +0000 UTC",
            "    period_test.go:18: Key changed between runs",
            "=== RUN   TestPeriodBoundsAcrossDST/Australia/Brisbane",
            "--- FAIL: TestPeriodBoundsAcrossDST (0.00s)",
            "    --- FAIL: TestPeriodBoundsAcrossDST/Australia/Sydney (0.00s)",
            "    --- FAIL: TestPeriodBoundsAcrossDST/Australia/Melbourne (0.00s)",
            "    --- PASS: TestPeriodBoundsAcrossDST/Australia/Brisbane (0.00s)",
        ]
    lines += _go_tests(504, 60)
    if failing:
        lines += ["FAIL", "FAIL\tgithub.com/northwind/invoicer/internal/billing\t0.412s", "FAIL"]
    else:
        lines += ["PASS", "ok  \tgithub.com/northwind/invoicer/internal/billing\t0.398s"]
    return "\n".join(lines)


E5 = Session(
    "e5-billing-dst",
    [
        U(
            "Finance found duplicate March invoices for some Australian customers, ACME-AU (customer 88120) for one. Grace Liu in finance ops needs a root cause by Friday; she reckons about a dozen customers are affected. Under no circumstances re-run the billing job in production. The replay environment has last night's copy of the database, use that."
        ),
        A(
            "Checking the toolchain, the deployed commit and how to reach the replay database.",
            Call(
                "shell",
                _argv("go version && git log -1 --oneline"),
                _codex_json(
                    "go version go1.22.2 linux/amd64\n9c04e1b billing: cache FX rates per run\n",
                    seconds=0.3,
                ),
            ),
            Call(
                "shell",
                _argv("grep -n '^REPLAY_' deploy/replay.env"),
                _codex_json(
                    "3:REPLAY_PG_HOST=replay-db.internal\n4:REPLAY_PG_PORT=6544\n5:REPLAY_PG_DB=invoicer\n6:REPLAY_BILLING_WORKERS=4\n",
                    seconds=0.0,
                ),
            ),
        ),
        A(
            "Listing March invoices for Australian customers on replay.",
            Call(
                "shell",
                _argv(
                    "psql \"$REPLAY_DSN\" -c \"select i.id, i.customer_id, c.timezone, i.period_end, i.total_cents, i.created_at from invoices i join customers c using (customer_id) where c.timezone like 'Australia/%' and i.period_start >= '2024-02-28' and i.period_start < '2024-03-02' order by i.customer_id, i.created_at\""
                ),
                _codex_json(_invoices(), seconds=1.7),
            ),
        ),
        A(
            "The second copies all come from the catch-up run on April 8 and all have a period end one hour later than the original. Counting how many customers have two.",
            Call(
                "shell",
                _argv(
                    "psql \"$REPLAY_DSN\" -c \"select count(*) from (select customer_id from invoices where period_start >= '2024-02-28' and period_start < '2024-03-02' group by customer_id having count(*) > 1) d\""
                ),
                _codex_json(" count \n-------\n   143\n(1 row)\n", seconds=0.4),
            ),
        ),
        A(
            "It's well over a dozen: 143 customers got a second March invoice, every one of them in a zone that left daylight saving on 7 April. Reading how periods and idempotency keys are computed.",
            Call(
                "shell",
                _argv("sed -n '1,140p' internal/billing/period.go"),
                _codex_json(_PERIOD_GO, seconds=0.0),
            ),
            Call(
                "shell",
                _argv("cat internal/billing/idempotency.go"),
                _codex_json(_IDEMPOTENCY_GO, seconds=0.0),
            ),
        ),
        A(
            "Found it. MonthlyPeriod freezes the customer's UTC offset at the moment the job runs. The April 1 run saw +11:00, the April 8 catch-up ran after daylight saving ended and saw +10:00, so the same March got two different end instants. The idempotency key is customer plus period end, so the catch-up run didn't recognise the invoice that already existed and billed again."
        ),
        U("That matches what finance sees. How do you want to fix it?"),
        A(
            "Two changes. Compute the boundaries with time.Date in the customer's real location instead of a frozen offset, so midnight on the 1st is right on both sides of a DST switch. And key idempotency on customer plus billing month (\"2024-03\") rather than an instant, because a month label can't drift when the offset changes. I'll write the failing test first.",
            Call(
                "apply_patch",
                {"input": _TEST_PATCH},
                _codex_json(
                    "Success. Updated the following files:\nA internal/billing/period_test.go\n",
                    seconds=0.0,
                ),
            ),
            Call(
                "shell",
                _argv("go test ./internal/billing/... -count=1 -v"),
                _codex_json(_go_test_output(failing=True), code=1, seconds=4.1),
            ),
        ),
        A(
            "Red as expected for Sydney and Melbourne, green for Brisbane, which has no daylight saving. Applying the fix.",
            Call(
                "apply_patch",
                {"input": _FIX_PATCH},
                _codex_json(
                    "Success. Updated the following files:\nM internal/billing/period.go\nM internal/billing/idempotency.go\n",
                    seconds=0.0,
                ),
            ),
            Call(
                "shell",
                _argv("go test ./internal/billing/... -count=1 -v"),
                _codex_json(_go_test_output(failing=False), seconds=3.9),
            ),
            Call(
                "shell",
                _argv("go run ./cmd/invoicer catchup --env replay --date 2024-04-08 --dry-run"),
                _codex_json(
                    "loaded 5231 customers (replay)\nperiod 2024-03 per customer zone\nwould create 0 invoices\nskipped 5231 (already invoiced for 2024-03)\n",
                    seconds=12.6,
                ),
            ),
        ),
        A(
            "Tests pass, and a dry run of the April 8 catch-up on replay now creates nothing. I'll put the fix on main so it ships with 2.18.0."
        ),
        U(
            "No, 2.18 carries the GST rounding change and won't ship for two weeks. Make it a hotfix off the v2.17.3 tag, v2.17.4. Also Grace wants the duplicates off customers' accounts. Oskar is the SRE who approves anything that writes to the prod billing DB, so write the cleanup as a migration and try it on replay first."
        ),
        A(
            "Moving the fix to a hotfix branch from v2.17.3 and drafting the cleanup migration.",
            Call(
                "shell",
                _argv("git switch -c hotfix/v2.17.4 v2.17.3 && git cherry-pick -x 5be81d2 e02c7a4"),
                _codex_json(
                    "Switched to a new branch 'hotfix/v2.17.4'\n[hotfix/v2.17.4 7d1a0c3] billing: period bounds in the customer's location\n Date: Tue Apr 16 10:12:44 2024 +0000\n 2 files changed, 14 insertions(+), 12 deletions(-)\n[hotfix/v2.17.4 b3e9f51] billing: test period bounds across DST\n Date: Tue Apr 16 10:02:10 2024 +0000\n 1 file changed, 22 insertions(+)\n create mode 100644 internal/billing/period_test.go\n",
                    seconds=0.5,
                ),
            ),
            Call(
                "apply_patch",
                {
                    "input": "*** Begin Patch\n*** Add File: migrations/0042_void_duplicate_invoices.sql\n+-- Duplicate March invoices from the 2024-04-08 catch-up run.\n+DELETE FROM invoices\n+WHERE created_at >= '2024-04-08' AND created_at < '2024-04-09'\n+  AND period_start >= '2024-02-28' AND period_start < '2024-03-02'\n+  AND customer_id IN (SELECT customer_id FROM invoices\n+                      WHERE period_start >= '2024-02-28' AND period_start < '2024-03-02'\n+                      GROUP BY customer_id HAVING count(*) > 1);\n*** End Patch"
                },
                _codex_json(
                    "Success. Updated the following files:\nA migrations/0042_void_duplicate_invoices.sql\n",
                    seconds=0.0,
                ),
            ),
            Call(
                "shell",
                _argv('migrate -path migrations -database "$REPLAY_DSN" up 1'),
                _codex_json(
                    'error: migration failed in line 0: -- Duplicate March invoices from the 2024-04-08 catch-up run.\nDELETE FROM invoices\nWHERE created_at >= \'2024-04-08\' AND created_at < \'2024-04-09\' (details: pq: update or delete on table "invoices" violates foreign key constraint "payments_invoice_id_fkey" on table "payments")\n',
                    code=1,
                    seconds=0.8,
                ),
            ),
        ),
        A(
            "Some duplicates are referenced by payments. Checking how many.",
            Call(
                "shell",
                _argv(
                    "psql \"$REPLAY_DSN\" -At -c \"select count(distinct p.invoice_id) from payments p join invoices i on i.id = p.invoice_id where i.created_at >= '2024-04-08' and i.created_at < '2024-04-09'\""
                ),
                _codex_json("61\n", seconds=0.3),
            ),
        ),
        A(
            "So the cleanup marks the duplicates void instead of deleting them: 61 were already charged, their payments point at them, and finance needs the audit trail to issue the refunds. Rows stay, status becomes void with a reason.",
            Call(
                "apply_patch",
                {
                    "input": "*** Begin Patch\n*** Update File: migrations/0042_void_duplicate_invoices.sql\n@@\n-DELETE FROM invoices\n+UPDATE invoices SET status = 'void', void_reason = 'duplicate: dst catch-up 2024-04-08'\n*** End Patch"
                },
                _codex_json(
                    "Success. Updated the following files:\nM migrations/0042_void_duplicate_invoices.sql\n",
                    seconds=0.0,
                ),
            ),
            Call(
                "shell",
                _argv('migrate -path migrations -database "$REPLAY_DSN" up 1'),
                _codex_json("42/u void_duplicate_invoices (88.417ms)\n", seconds=0.6),
            ),
        ),
        A(
            "The void migration applies cleanly on replay. Open: PR of hotfix/v2.17.4 with the migration for Oskar to approve, and the root-cause write-up for Grace."
        ),
    ],
    [
        Fact("person", ("Grace Liu", "finance"), "who needs the root cause"),
        Fact("constraint", ("re-run", "production"), "never re-run billing in production"),
        Fact("tool_output", ("go1.22.2",), "Go toolchain"),
        Fact("number", ("6544",), "replay database port"),
        Fact("tool_output", ("INV-2024-03-70744",), "the duplicate invoice for customer 88120"),
        Fact("number", ("143",), "customers affected, corrected from about a dozen"),
        Fact("conclusion", ("idempotency key",), "frozen offset changed the key"),
        Fact("decision", ("billing month", "offset"), "key on the billing month, and why"),
        Fact("tool_output", ("TestPeriodBoundsAcrossDST",), "the test that reproduces it"),
        Fact("person", ("Oskar", "SRE"), "who approves prod billing writes"),
        Fact("tool_output", ("payments_invoice_id_fkey",), "why the delete failed"),
        Fact("decision", ("void", "audit trail"), "void rather than delete, and why"),
        Fact("decision", ("2.17.4",), "ship as a hotfix, not with 2.18.0"),
        Fact("path", ("internal/billing/period.go",), "file fixed"),
        Fact("path", ("0042_void_duplicate_invoices.sql",), "cleanup migration"),
    ],
)

SESSIONS = [E1, E2, E3, E4, E5]
