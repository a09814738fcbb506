# ruff: noqa: E501  (scripted session data: long tool outputs read better unwrapped)
"""Set M: tuning sessions (per-fact results allowed), written without reading the summarizer.

Five domains no other tuning set uses: an Elasticsearch reindex that comes up short, a Terraform
plan that wants to replace a production database, a Kafka consumer group stuck in rebalances, an
over-the-air firmware update that bricks devices and a shift-scheduling app that moves shifts by
an hour after a daylight-saving change. Each session is long (24-35k tokens by the len/3
estimate). The set leans on two shapes: figures said in passing, several to a chatty message
("about 9,200 updates a minute, the feed lands at 02:30"), and values seen only in a long tool
output (logs, tables, JSON dumps of 50-400 lines) that the conversation names only indirectly or
roughly ("the node that kept rejecting writes", "about fifteen thousand short"). A value said
then corrected keeps only the correction as the needle. Claude Code shapes (Bash, Read, Edit,
MultiEdit, Write, Grep, Glob) and Codex shapes (shell argv with both output envelopes,
apply_patch) both appear.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from tests.perf.quality.script import (
    A,
    Call,
    Fact,
    Session,
    U,
    bury,
    codex_json,
    codex_patch,
    codex_patched,
    codex_shell,
    codex_text,
    edited,
    numbered,
    short_hash,
    written,
)

# -- shared shapes -----------------------------------------------------------------------------

Row = Callable[[random.Random, int], str]


def _rows(seed: int, count: int, row: Row, planted: dict[float, str] | None = None) -> str:
    """`count` lines made by `row`, with planted lines buried among them."""
    rng = random.Random(seed)
    return bury([row(rng, i) for i in range(count)], planted or {})


def _stamp(rng: random.Random, day: int, hour: int) -> str:
    return f"2026-11-{day:02d}T{hour:02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z"


def _git_log(seed: int, count: int, authors: list[str], subjects: list[str]) -> str:
    def row(rng: random.Random, i: int) -> str:
        subject = rng.choice(subjects).format(n=rng.randint(10, 990))
        return f"{short_hash(rng, 9)} {rng.choice(authors):<16} 2026-{11 - i * 2 // count:02d}-{28 - i % 27:02d} {subject}"

    return _rows(seed, count, row)


def _pytest(seed: int, count: int, module: str, words: list[str], summary: str) -> str:
    def row(rng: random.Random, i: int) -> str:
        name = "_".join(rng.choice(words) for _ in range(3))
        return f"{module}::test_{name}_{i} PASSED [{100 * (i + 1) // count:3d}%]"

    return _rows(seed, count, row) + "\n" + summary


# -- m1: an Elasticsearch reindex that comes up short --------------------------------------------

_ES = "/srv/search-ops"
_ES_NODES = [f"es-data-{i:02d}" for i in range(1, 10)]


def _cat_indices(seed: int) -> str:
    head = "health status index                         uuid                   pri rep docs.count docs.deleted store.size pri.store.size"
    kinds = [
        "logs-app",
        "logs-nginx",
        "metrics-node",
        "audit",
        "sessions",
        "suggest",
        "orders-archive",
    ]

    def row(rng: random.Random, i: int) -> str:
        name = f"{rng.choice(kinds)}-2026.11.{rng.randint(1, 28):02d}"
        docs = rng.randint(40_000, 9_900_000)
        return f"green  open   {name:<29} {short_hash(rng, 22)} {rng.choice([1, 3, 5]):>3} {1:>3} {docs:>10} {rng.randint(0, 90_000):>12} {rng.randint(1, 90)}.{rng.randint(0, 9)}gb {rng.randint(1, 45)}.{rng.randint(0, 9)}gb"

    return (
        head
        + "\n"
        + _rows(
            seed,
            140,
            row,
            {
                0.31: "green  open   products-v7                   Xq3lM0d2RzK8bA1pYtWw9e   6   1    2413877        88120      9.8gb          4.9gb",
                0.64: "green  open   products-v8                   pV7cN2sHq0LrT5mJk1Zx3a   6   1    2398112          406      9.1gb          4.5gb",
            },
        )
    )


def _reindex_task() -> str:
    failures = [
        {
            "index": "products-v8",
            "id": f"sku-{random.Random(i).randint(100000, 999999)}",
            "cause": {
                "type": "version_conflict_engine_exception",
                "reason": "version conflict, document already exists (current version [2])",
            },
            "status": 409,
        }
        for i in range(18)
    ]
    body = {
        "completed": True,
        "task": {
            "node": "Zr1kd8QpTKmW3sLx0vYbNg",
            "id": 88213344,
            "type": "transport",
            "action": "indices:data/write/reindex",
            "status": {
                "total": 2413877,
                "updated": 0,
                "created": 2398112,
                "deleted": 0,
                "batches": 2414,
                "version_conflicts": 15765,
                "noops": 0,
                "retries": {"bulk": 1322, "search": 0},
                "throttled_millis": 0,
                "requests_per_second": -1.0,
                "throttled_until_millis": 0,
            },
            "description": "reindex from [products-v7] to [products-v8]",
            "start_time_in_millis": 1795917601223,
            "running_time_in_nanos": 13213877412090,
            "cancellable": True,
        },
        "response": {"took": 13213877, "timed_out": False, "failures": failures},
    }
    return json.dumps(body, indent=2)


def _es_log(seed: int) -> str:
    def row(rng: random.Random, i: int) -> str:
        node = rng.choice([n for n in _ES_NODES if n != "es-data-05"])
        return rng.choice(
            [
                f"[{_stamp(rng, 21, 3)}][INFO ][o.e.c.m.MetadataMappingService] [{node}] [logs-app-2026.11.21/{short_hash(rng, 22)}] update_mapping [_doc]",
                f'[{_stamp(rng, 21, 3)}][INFO ][o.e.c.r.a.AllocationService] [{node}] current.health="GREEN" previous.health="YELLOW"',
                f"[{_stamp(rng, 21, 3)}][WARN ][o.e.m.j.JvmGcMonitorService] [{node}] [gc][{rng.randint(1000, 99000)}] overhead, spent [{rng.randint(200, 900)}ms] collecting in the last [1s]",
                f"[{_stamp(rng, 21, 4)}][INFO ][o.e.i.r.RecoverySourceHandler] [{node}] [products-v8][{rng.randint(0, 5)}] finalizing recovery took [{rng.randint(2, 90)}ms]",
                f"[{_stamp(rng, 21, 4)}][INFO ][o.e.x.i.IndexLifecycleRunner] [{node}] policy [logs-default] for index [logs-nginx-2026.11.{rng.randint(1, 20):02d}] on an error step",
            ]
        )

    rejected = "[2026-11-21T04:12:33.918Z][WARN ][o.e.i.r.AbstractBulkByScrollRequest] [es-data-05] bulk failure on [products-v8][4]: rejected execution of coordinating operation [coordinating_and_primary_bytes=1073741824, replica_bytes=0, all_bytes=1073741824, max_coordinating_and_primary_bytes=1073741824]"
    return _rows(
        seed,
        280,
        row,
        {
            0.22: rejected,
            0.41: rejected.replace("04:12:33.918", "04:19:02.140"),
            0.58: rejected.replace("04:12:33.918", "04:26:47.551"),
            0.77: "[2026-11-21T04:31:09.004Z][WARN ][o.e.i.IndexingPressure] [es-data-05] indexing_pressure.memory.limit [10%] reached, rejecting [write] on [products-v8]",
        },
    )


_REINDEX_SH = """#!/usr/bin/env bash
# products reindex: v7 -> v8 with the new analyzers
set -euo pipefail
ES=${ES:-https://search-prod.internal:9200}
curl -sS -XPOST "$ES/_reindex?wait_for_completion=false&slices=auto" -H 'content-type: application/json' -d '{
  "conflicts": "proceed",
  "source": {"index": "products-v7", "size": 1000},
  "dest": {"index": "products-v8", "op_type": "create"}
}'
"""

_INDEXER_PY = """import os
from elasticsearch import Elasticsearch, helpers

ALIAS = os.environ.get("PRODUCTS_WRITE_ALIAS", "products-write")


def push(es: Elasticsearch, docs):
    # the catalog feed writes through the alias so a reindex can swap indices under it
    actions = ({"_index": ALIAS, "_id": d["sku"], "_source": d} for d in docs)
    return helpers.bulk(es, actions, chunk_size=500, request_timeout=30)
"""


def _aliases(seed: int) -> str:
    def row(rng: random.Random, i: int) -> str:
        k = rng.choice(["logs", "metrics", "audit", "sessions", "suggest"])
        return (
            f"{k}-read-{i:<24} {k}-2026.11.{rng.randint(1, 28):02d}        -      -        -      -"
        )

    return (
        "alias                        index                         filter routing.index routing.search is_write_index\n"
        + _rows(
            seed,
            60,
            row,
            {
                0.5: "products-write               products-v8                   -      -        -      true",
                0.52: "products-read                products-v7                   -      -        -      -",
            },
        )
    )


_M1_FACTS = [
    Fact("person", ("Nadia Okafor", "search"), "search team lead who noticed the short count"),
    Fact("person", ("Tomás Rivera", "catalog"), "owns the catalog feed writer"),
    Fact("number", ("9,200",), "catalog updates a minute at peak, said in passing"),
    Fact("number", ("02:30",), "when the nightly feed lands, said in passing"),
    Fact("number", ("41 minutes",), "last reindex on the old cluster, said in passing"),
    Fact("tool_output", ("2398112",), "docs in products-v8, _cat/indices only"),
    Fact("tool_output", ("15765",), "version conflicts in the task result, restated roughly"),
    Fact("tool_output", ("es-data-05",), "the node that kept rejecting bulk writes"),
    Fact(
        "conclusion",
        ("write alias", "op_type"),
        "the feed wrote into v8 through the write alias, so op_type create skipped those docs",
    ),
    Fact("decision", ("version_type", "external"), "reindex with external versions"),
    Fact("number", ("requests_per_second=3200",), "throttle, the corrected value"),
    Fact("constraint", ("80%", "disk"), "the cluster must not pass 80% disk"),
    Fact("path", ("scripts/reindex/products_v9.sh",), "new reindex script written"),
    Fact("constraint", ("products-read", "Friday"), "read alias swap only after Friday's sale"),
]

M1 = Session(
    "m1-es-reindex-short",
    [
        U(
            f"Weekend reindex of products-v7 into products-v8 finished but Nadia Okafor, who leads the search team, says v8 is missing documents. Ops scripts are in {_ES}. Some context before you start: the catalog pushes around 9,200 updates a minute at peak, the nightly feed lands at 02:30 UTC, and last time we reindexed on the old cluster it took 41 minutes, this one took over three and a half hours. Can you figure out what went missing and why?"
        ),
        A(
            "Comparing the two indices and pulling the reindex task's result.",
            Call(
                "Bash",
                {
                    "command": "curl -s 'https://search-prod.internal:9200/_cat/indices?v&s=index' | head -n 150",
                    "description": "List indices with doc counts",
                },
                _cat_indices(2101),
            ),
            Call(
                "Bash",
                {
                    "command": "curl -s https://search-prod.internal:9200/_tasks/Zr1kd8QpTKmW3sLx0vYbNg:88213344 | jq .",
                    "description": "The reindex task's stored result",
                },
                _reindex_task(),
            ),
        ),
        A(
            "v8 came up about fifteen thousand documents short of v7, and the task result accounts for that as version conflicts, which `conflicts: proceed` let the task skip silently instead of failing. The retries line also shows a lot of bulk retries. Reading the script and the cluster log from the run.",
            Call(
                "Read",
                {"file_path": f"{_ES}/scripts/reindex/products_v8.sh"},
                numbered(_REINDEX_SH),
            ),
            Call(
                "Bash",
                {
                    "command": "ssh es-master-01 'grep -h products-v8\\|IndexingPressure\\|GcMonitor\\|AllocationService\\|MetadataMapping\\|IndexLifecycle /var/log/elasticsearch/search-prod.log' | head -n 400",
                    "description": "Cluster log around the reindex",
                },
                _es_log(2102),
            ),
        ),
        A(
            "The bulk retries come from one data node: it rejected coordinating writes for shard 4 several times and then hit the indexing-pressure limit. That explains why the run took hours, but a rejected bulk is retried, so it doesn't lose documents by itself. The conflicts do. A conflict with op_type create means the document already existed in v8 when the reindex tried to create it. Checking who else writes to v8.",
            Call(
                "Grep",
                {
                    "pattern": "PRODUCTS_WRITE_ALIAS|products-write",
                    "path": "/srv",
                    "output_mode": "files_with_matches",
                },
                "/srv/catalog-feed/feed/indexer.py\n/srv/catalog-feed/deploy/values-prod.yaml\n/srv/search-ops/scripts/aliases/swap.sh",
            ),
            Call("Read", {"file_path": "/srv/catalog-feed/feed/indexer.py"}, numbered(_INDEXER_PY)),
            Call(
                "Bash",
                {
                    "command": "curl -s 'https://search-prod.internal:9200/_cat/aliases?v' ",
                    "description": "Aliases",
                },
                _aliases(2103),
            ),
        ),
        A(
            "That's the cause. The write alias was moved to v8 before the reindex started, so the live feed wrote fresh versions of those SKUs into v8 first, and then the reindex's op_type create hit them as conflicts and skipped them. The skipped ones are fine (they're newer). What's actually missing is different: the feed only sends changed SKUs, so a SKU deleted in v7 during the run, or one whose feed write failed, has no second chance. Tomás Rivera owns the catalog feed; he'd know whether the feed logs its failed bulks."
        ),
        U(
            "Tomás says the feed doesn't retry failed bulks, it just logs them. So how do we get a correct v9 without stopping the feed?"
        ),
        A(
            "Reindex again into v9 with version_type external: each document keeps v7's version, and a document the feed already wrote with a newer version wins instead of being skipped or overwritten. That works while the feed keeps writing. To avoid the rejections, the reindex will be throttled; I'll use requests_per_second=6000, which is under the rate the node fell over at.",
            Call(
                "Write",
                {
                    "file_path": f"{_ES}/scripts/reindex/products_v9.sh",
                    "content": _REINDEX_SH.replace("v8", "v9")
                    .replace('"op_type": "create"', '"version_type": "external"')
                    .replace("slices=auto", "slices=auto&requests_per_second=6000"),
                },
                written(f"{_ES}/scripts/reindex/products_v9.sh"),
            ),
        ),
        U(
            "6000 is too high. The ops rule on this cluster: the reindex can't use more than a third of the feed's peak bulk rate plus headroom, and we need disk to stay below 80% while both indices exist. We're at 71% now."
        ),
        A(
            "Correction then: the v9 script now throttles at requests_per_second=3200, about a third of what the cluster took at peak while the feed was also writing. v9 will be roughly 9 GB with replicas, which keeps disk under 80% while v7, v8 and v9 all exist, and I've added a step that deletes v8 before v9 starts so it has the room.",
            Call(
                "Edit",
                {
                    "file_path": f"{_ES}/scripts/reindex/products_v9.sh",
                    "old_string": "slices=auto&requests_per_second=6000",
                    "new_string": "slices=auto&requests_per_second=3200",
                },
                edited(
                    f"{_ES}/scripts/reindex/products_v9.sh",
                    "curl -sS -XPOST \"$ES/_reindex?wait_for_completion=false&slices=auto&requests_per_second=3200\" -H 'content-type: application/json' -d '{",
                    5,
                ),
            ),
        ),
        U(
            "Also: do not swap products-read until after Friday's sale ends. Nadia wants search results frozen on v7 during the sale."
        ),
        A(
            "Noted: products-read stays on v7 until after Friday. Checking the rest of the ops repo for anything else that touches the aliases.",
            Call(
                "Bash",
                {
                    "command": f"cd {_ES} && git log --format='%h %an %ad %s' --date=short -n 120",
                    "description": "Recent ops history",
                },
                _git_log(
                    2104,
                    120,
                    ["Nadia Okafor", "Tomás Rivera", "Jun Park", "renovate[bot]"],
                    [
                        "ilm: roll logs at {n}gb",
                        "alias swap script: dry run #{n}",
                        "chore(deps): bump elasticsearch-py to 8.{n}",
                        "snapshot: repo path {n}",
                        "analyzers: synonyms batch {n}",
                    ],
                ),
            ),
            Call(
                "Bash",
                {
                    "command": f"cd {_ES} && python -m pytest tests -q -p no:randomly",
                    "description": "Ops script tests",
                },
                _pytest(
                    2105,
                    220,
                    "tests/test_scripts.py",
                    ["alias", "swap", "reindex", "throttle", "snapshot", "analyzer", "dry", "run"],
                    "220 passed in 6.18s",
                ),
            ),
        ),
        A(
            "The v9 script is ready and the tests pass. Summary for Nadia: v8 lost documents because the feed wrote into it through the write alias before the reindex copied them; v9 uses external versions and a 3200 requests per second throttle, and the read alias stays on v7 through the sale."
        ),
    ],
    _M1_FACTS,
)

# -- m2: a Terraform plan that wants to replace a production database --------------------------

_TF = "/home/dev/infra-live"
_TF_TYPES = [
    "aws_security_group_rule",
    "aws_iam_role_policy",
    "aws_cloudwatch_metric_alarm",
    "aws_s3_bucket_lifecycle_configuration",
    "aws_route53_record",
    "aws_ssm_parameter",
    "aws_lambda_permission",
]


def _tf_plan(seed: int) -> str:
    rng = random.Random(seed)
    blocks: list[str] = []
    for i in range(52):
        kind = rng.choice(_TF_TYPES)
        name = f"{rng.choice(['api', 'ledger', 'billing', 'web', 'jobs', 'edge'])}_{i}"
        blocks.append(
            f"  # module.{rng.choice(['core', 'app', 'obs'])}.{kind}.{name} will be updated in-place\n"
            f'  ~ resource "{kind}" "{name}" {{\n'
            f'        id   = "{short_hash(rng, 17)}"\n'
            f"      ~ tags = {{\n"
            f'          ~ "CostCenter" = "cc-{rng.randint(100, 999)}" -> "cc-{rng.randint(100, 999)}"\n'
            f"            # ({rng.randint(2, 6)} unchanged elements hidden)\n"
            f"        }}\n"
            f"        # ({rng.randint(3, 14)} unchanged attributes hidden)\n"
            f"    }}\n"
        )
    replaced = (
        "  # module.ledger_db.aws_db_instance.ledger_primary must be replaced\n"
        '-/+ resource "aws_db_instance" "ledger_primary" {\n'
        '      ~ arn                        = "arn:aws:rds:eu-west-1:481516234200:db:ledger-primary" -> (known after apply)\n'
        '      ~ endpoint                   = "ledger-primary.c8xk2q.eu-west-1.rds.amazonaws.com:5432" -> (known after apply)\n'
        '      ~ kms_key_id                 = "arn:aws:kms:eu-west-1:481516234200:key/mrk-7f3c2a91e0b44d5c" -> "alias/ledger-db" # forces replacement\n'
        "        storage_encrypted          = true\n"
        "        # (38 unchanged attributes hidden)\n"
        "    }\n"
    )
    blocks.insert(29, replaced)
    return (
        "Refreshing state...\n"
        + "".join(
            f"{rng.choice(_TF_TYPES)}.{rng.choice(['api', 'ledger', 'web'])}_{i}: Refreshing state... [id={short_hash(rng, 12)}]\n"
            for i in range(90)
        )
        + "\nTerraform will perform the following actions:\n\n"
        + "\n".join(blocks)
        + "\nPlan: 1 to add, 52 to change, 1 to destroy.\n"
    )


def _cloudtrail(seed: int) -> str:
    rng = random.Random(seed)
    events = []
    for _ in range(70):
        events.append(
            {
                "EventId": f"{short_hash(rng, 8)}-{short_hash(rng, 4)}-{short_hash(rng, 4)}",
                "EventName": rng.choice(
                    [
                        "DescribeDBInstances",
                        "ListTagsForResource",
                        "DescribeDBSnapshots",
                        "DescribeDBClusters",
                    ]
                ),
                "EventTime": f"2026-10-{rng.randint(1, 30):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z",
                "Username": rng.choice(
                    ["atlantis", "grafana-rds-exporter", "backup-verifier", "priya.raman"]
                ),
                "Resources": [
                    {"ResourceType": "AWS::RDS::DBInstance", "ResourceName": "ledger-primary"}
                ],
            }
        )
    events.insert(
        44,
        {
            "EventId": "c0a9e1f2-77b1-4e0c-9d2e-5b3f1a8e6c44",
            "EventName": "ModifyDBInstance",
            "EventTime": "2026-10-17T22:41:00Z",
            "Username": "ci-bot-legacy",
            "Resources": [
                {"ResourceType": "AWS::RDS::DBInstance", "ResourceName": "ledger-primary"}
            ],
        },
    )
    return json.dumps({"Events": events}, indent=2)


def _state_list(seed: int) -> str:
    def row(rng: random.Random, i: int) -> str:
        return f"module.{rng.choice(['core', 'app', 'obs', 'ledger_db', 'edge'])}.{rng.choice(_TF_TYPES)}.{rng.choice(['api', 'ledger', 'billing', 'web', 'jobs'])}_{i}"

    return _rows(seed, 190, row)


_RDS_MAIN_TF = """variable "kms_key_id" {
  type        = string
  description = "KMS key for storage encryption"
  default     = "alias/ledger-db"
}

resource "aws_db_instance" "ledger_primary" {
  identifier              = "ledger-primary"
  engine                  = "postgres"
  engine_version          = "15.7"
  instance_class          = var.instance_class
  allocated_storage       = var.allocated_storage
  storage_encrypted       = true
  kms_key_id              = var.kms_key_id
  backup_retention_period = 14
  deletion_protection     = true
  multi_az                = true
}
"""

_M2_FACTS = [
    Fact("person", ("Priya Raman", "DBA"), "the DBA who owns ledger-primary"),
    Fact("person", ("Oskar Lindqvist", "platform"), "platform lead who approves applies"),
    Fact("number", ("14 workspaces",), "workspace count, said in passing"),
    Fact("number", ("1.9 TB",), "ledger database size, said in passing"),
    Fact("number", ("11 minutes",), "plan time on prod, said in passing"),
    Fact("tool_output", ("mrk-7f3c2a91e0b44d5c",), "key the live instance uses, plan only"),
    Fact("tool_output", ("ci-bot-legacy",), "who modified the instance, CloudTrail only"),
    Fact("tool_output", ("52 to change",), "plan summary line"),
    Fact(
        "conclusion",
        ("alias", "key ARN"),
        "module default is an alias, the live DB stores the key ARN, so the diff forces replacement",
    ),
    Fact("decision", ("prevent_destroy",), "add prevent_destroy on the primary"),
    Fact("number", ("v3.8.2",), "module version to pin, the corrected one"),
    Fact("constraint", ("Atlantis",), "never apply outside Atlantis"),
    Fact("path", ("envs/prod/ledger/main.tf",), "prod ledger stack edited"),
    Fact("constraint", ("deletion_protection",), "deletion_protection must stay on"),
]

M2 = Session(
    "m2-terraform-replace-db",
    [
        U(
            f"The prod plan for the ledger stack in {_TF} wants to destroy something and Oskar Lindqvist, our platform lead, won't approve it until we know why. Rough picture: we have 14 workspaces, the prod plan takes about 11 minutes because of the refresh, and the ledger database is 1.9 TB so a replace would mean hours of restore. Please find out what it wants to replace."
        ),
        A(
            "Running the plan for the prod ledger workspace.",
            Call(
                "shell",
                codex_shell("terraform -chdir=envs/prod/ledger plan -no-color -lock=false", _TF),
                codex_text(_tf_plan(2201), seconds=641.3),
            ),
        ),
        A(
            "Most of the plan is tag churn, but one resource would be destroyed and recreated: the ledger primary, and the attribute forcing it is its KMS key. The state holds the key's full ARN while the configuration now passes an alias. Checking the module and who changed the instance.",
            Call(
                "shell",
                codex_shell(
                    "cat modules/rds/main.tf && git -C modules log --oneline -n 5 -- rds", _TF
                ),
                codex_json(
                    _RDS_MAIN_TF
                    + "\n9d1c2ab rds: default kms key to the alias\n41e0f7c rds: engine 15.7\n07aa913 rds: tags\n5c2e8b0 rds: backup window\ne3f0d71 rds: initial",
                    seconds=0.1,
                ),
            ),
            Call(
                "shell",
                codex_shell(
                    "aws cloudtrail lookup-events --lookup-attributes AttributeKey=ResourceName,AttributeValue=ledger-primary --start-time 2026-10-01 --output json",
                    _TF,
                ),
                codex_json(_cloudtrail(2202), seconds=3.8),
            ),
        ),
        A(
            "Only one write event in October among the describe calls: someone modified the instance late one evening outside Terraform, from the old CI account. The module commit that set the default to the alias landed after that. So the module now says `alias/ledger-db`, the instance was encrypted with the key by ARN, and AWS reports the ARN back, which Terraform treats as a different value and a forced replacement."
        ),
        U(
            "Priya Raman is the DBA for ledger-primary, she confirms the alias points to that same key. So it's a no-op in reality. What's the fix?"
        ),
        A(
            "Two things. Pass the key ARN explicitly for the prod ledger stack so configuration and state agree, and add lifecycle prevent_destroy on the primary so a future diff like this fails the plan instead of showing a replace. I'd rather not use ignore_changes on kms_key_id: it would also hide a real key change. Pinning the module to v3.8.0, which has the lifecycle block variable.",
            Call(
                "shell",
                codex_shell("cat envs/prod/ledger/main.tf", _TF),
                codex_text(
                    'module "ledger_db" {\n  source            = "git::ssh://git@git.internal/infra/modules.git//rds?ref=v3.6.4"\n  instance_class    = "db.r6g.4xlarge"\n  allocated_storage = 2200\n}\n',
                    seconds=0.1,
                ),
            ),
            Call(
                "apply_patch",
                codex_patch(
                    "envs/prod/ledger/main.tf",
                    '  source            = "git::ssh://git@git.internal/infra/modules.git//rds?ref=v3.6.4"',
                    '  source            = "git::ssh://git@git.internal/infra/modules.git//rds?ref=v3.8.0"\n  kms_key_id        = "arn:aws:kms:eu-west-1:481516234200:key/mrk-7f3c2a91e0b44d5c"\n  prevent_destroy   = true',
                    'module "ledger_db" {',
                ),
                codex_patched("envs/prod/ledger/main.tf"),
            ),
        ),
        U(
            "v3.8.0 has the bug where prevent_destroy is wired to the replica instead of the primary, Oskar fixed that in the next patch release. And remember: nobody runs apply from a laptop, it goes through Atlantis only, and deletion_protection stays on no matter what."
        ),
        A(
            "Correcting the pin to v3.8.2, the patch release with the prevent_destroy fix. deletion_protection is untouched and stays true; the apply will go through Atlantis on the PR.",
            Call(
                "apply_patch",
                codex_patch(
                    "envs/prod/ledger/main.tf",
                    '  source            = "git::ssh://git@git.internal/infra/modules.git//rds?ref=v3.8.0"',
                    '  source            = "git::ssh://git@git.internal/infra/modules.git//rds?ref=v3.8.2"',
                    'module "ledger_db" {',
                ),
                codex_patched("envs/prod/ledger/main.tf"),
            ),
            Call(
                "shell",
                codex_shell("terraform -chdir=envs/prod/ledger state list", _TF),
                codex_json(_state_list(2203), seconds=2.2),
            ),
        ),
        A(
            "Planning again with the pinned module.",
            Call(
                "shell",
                codex_shell(
                    "terraform -chdir=envs/prod/ledger init -upgrade -no-color >/dev/null && terraform -chdir=envs/prod/ledger plan -no-color -lock=false",
                    _TF,
                ),
                codex_text(
                    _tf_plan(2204)
                    .replace(
                        "1 to add, 52 to change, 1 to destroy",
                        "0 to add, 52 to change, 0 to destroy",
                    )
                    .split("  # module.ledger_db")[0]
                    + "\nPlan: 0 to add, 52 to change, 0 to destroy.\n",
                    seconds=655.0,
                ),
            ),
        ),
        A(
            "The replace is gone: nothing to add or destroy, only the tag updates. Ready for the Atlantis PR and Oskar's approval; Priya doesn't need to do anything on the database."
        ),
    ],
    _M2_FACTS,
)

# -- m3: a Kafka consumer group stuck in rebalances -------------------------------------------

_KB = "/home/dev/billing-consumer"


def _group_describe(seed: int) -> str:
    head = "GROUP           TOPIC              PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID                                        HOST            CLIENT-ID"

    def row(rng: random.Random, i: int) -> str:
        topic = ["invoices.created", "invoices.paid", "credit-notes"][i % 3]
        current = rng.randint(10_000_000, 90_000_000)
        lag = rng.randint(0, 48_000)
        member = f"consumer-billing-{rng.randint(1, 8)}-{short_hash(rng, 8)}-{short_hash(rng, 4)}"
        return f"billing         {topic:<18} {i // 3:<10} {current:<15} {current + lag:<15} {lag:<15} {member:<50} /10.42.{rng.randint(0, 9)}.{rng.randint(2, 250):<6} consumer-billing-{rng.randint(1, 8)}"

    return (
        head
        + "\n"
        + _rows(
            seed,
            72,
            row,
            {
                0.35: "billing         invoices.created   17         61822014        63662235        1840221         -                                                  -               -",
            },
        )
    )


def _consumer_log(seed: int) -> str:
    def row(rng: random.Random, i: int) -> str:
        t = f"2026-11-26 0{rng.randint(1, 5)}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d},{rng.randint(0, 999):03d}"
        member = f"consumer-billing-{rng.choice([1, 2, 4, 5, 6, 7, 8])}-{short_hash(rng, 6)}"
        return rng.choice(
            [
                f"{t} INFO  [{member}] o.a.k.c.c.i.ConsumerCoordinator - [Consumer clientId={member}, groupId=billing] Setting offset for partition invoices.paid-{rng.randint(0, 23)} to the committed offset FetchPosition{{offset={rng.randint(10**7, 9 * 10**7)}}}",
                f"{t} INFO  [{member}] o.a.k.c.c.i.AbstractCoordinator - [Consumer clientId={member}, groupId=billing] (Re-)joining group",
                f"{t} INFO  [{member}] o.a.k.c.c.i.ConsumerCoordinator - [Consumer clientId={member}, groupId=billing] Revoke previously assigned partitions invoices.created-{rng.randint(0, 23)}, credit-notes-{rng.randint(0, 23)}",
                f"{t} INFO  [{member}] c.a.b.InvoiceListener - rendered invoice INV-{rng.randint(100000, 999999)} in {rng.randint(40, 2400)} ms",
                f"{t} INFO  [{member}] o.a.k.c.c.i.AbstractCoordinator - [Consumer clientId={member}, groupId=billing] Successfully joined group with generation Generation{{generationId={rng.randint(4000, 4999)}, protocol='range'}}",
            ]
        )

    kicked = "2026-11-26 03:{m}:12,440 WARN  [consumer-billing-3-9f2e41] o.a.k.c.c.i.ConsumerCoordinator - [Consumer clientId=consumer-billing-3-9f2e41, groupId=billing] consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, which typically implies that the poll loop is spending too much time processing messages. Last poll was {ms} ms ago."
    return _rows(
        seed,
        300,
        row,
        {
            0.18: kicked.format(m="07", ms="301877"),
            0.46: kicked.format(m="19", ms="412733"),
            0.71: kicked.format(m="33", ms="356020"),
            0.9: "2026-11-26 03:48:02,019 INFO  [consumer-billing-3-9f2e41] c.a.b.InvoiceListener - rendered invoice INV-771204 in 281443 ms (pdf pages=1920, template=statement-annual)",
        },
    )


def _jmx(seed: int) -> str:
    rng = random.Random(seed)
    metrics = {}
    for member in range(1, 9):
        metrics[f"consumer-billing-{member}"] = {
            "records-consumed-rate": round(rng.uniform(20, 400), 1),
            "records-lag-max": rng.randint(0, 60_000),
            "fetch-latency-avg": round(rng.uniform(2, 80), 2),
            "commit-latency-avg": round(rng.uniform(3, 40), 2),
            "rebalance-rate-per-hour": round(rng.uniform(8, 30), 2),
            "last-poll-seconds-ago": rng.randint(0, 40),
            "assigned-partitions": rng.randint(0, 12),
            "time-between-poll-avg": round(rng.uniform(200, 9000), 1),
        }
    metrics["consumer-billing-3"]["time-between-poll-max"] = 412733.0
    return json.dumps(metrics, indent=2)


_APP_YML = """spring:
  kafka:
    bootstrap-servers: ${KAFKA_BROKERS}
    consumer:
      group-id: billing
      enable-auto-commit: false
      auto-offset-reset: earliest
      max-poll-records: 500
      properties:
        max.poll.interval.ms: 300000
        session.timeout.ms: 45000
        partition.assignment.strategy: org.apache.kafka.clients.consumer.RangeAssignor
    listener:
      ack-mode: batch
      concurrency: 3
"""

_LISTENER_JAVA = """package com.acme.billing;

import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

@Component
public class InvoiceListener {
    private final PdfRenderer renderer;
    private final InvoiceStore store;

    public InvoiceListener(PdfRenderer renderer, InvoiceStore store) {
        this.renderer = renderer;
        this.store = store;
    }

    @KafkaListener(topics = {"invoices.created", "invoices.paid", "credit-notes"})
    public void onInvoice(InvoiceEvent event) {
        // rendering is synchronous: the poll loop waits for every PDF
        byte[] pdf = renderer.render(event.invoiceId(), event.template());
        store.save(event.invoiceId(), pdf);
    }
}
"""

_M3_FACTS = [
    Fact("person", ("Lena Hoffmann", "billing"), "owns the billing consumer"),
    Fact("person", ("Raj Patel", "Kafka"), "Kafka platform on-call"),
    Fact("number", ("1.2 million",), "invoices a day, said in passing"),
    Fact("number", ("50,000",), "lag alarm threshold, said in passing"),
    Fact("number", ("17 minutes",), "yesterday's rebalance, said in passing"),
    Fact("tool_output", ("1840221",), "lag on the worst partition, group describe only"),
    Fact("tool_output", ("412733",), "longest gap between polls, log and JMX only"),
    Fact("tool_output", ("INV-771204",), "the invoice whose render took minutes"),
    Fact(
        "conclusion",
        ("max.poll.interval.ms", "annual statement"),
        "annual-statement PDF renders exceed the poll interval and trigger rebalances",
    ),
    Fact("decision", ("CooperativeStickyAssignor",), "assignor switched to cooperative"),
    Fact("number", ("max-poll-records: 120",), "batch size, the corrected value"),
    Fact("constraint", ("72 hours",), "retention: catch up before the data expires"),
    Fact("constraint", ("partitions", "ordering"), "no new partitions: per-customer ordering"),
    Fact("path", ("src/main/resources/application.yml",), "consumer config edited"),
    Fact("decision", ("statement-render",), "annual statements moved to their own topic"),
]

M3 = Session(
    "m3-kafka-rebalance-storm",
    [
        U(
            f"The billing consumer group keeps rebalancing and the lag alarm has been going off since last night. Lena Hoffmann owns the billing consumer and she's out until Monday, so it's us. Numbers off the top of my head: we process about 1.2 million invoices a day, the lag alarm fires at 50,000, and yesterday one rebalance lasted 17 minutes where nothing was consumed at all. Code is in {_KB}."
        ),
        A(
            "Checking the group's partitions and lag first.",
            Call(
                "Bash",
                {
                    "command": "kafka-consumer-groups.sh --bootstrap-server $KAFKA_BROKERS --describe --group billing",
                    "description": "Describe the billing consumer group",
                },
                _group_describe(2301),
            ),
        ),
        A(
            "Most partitions are within a few tens of thousands of messages, but one partition of invoices.created has no consumer assigned at the moment and is far behind the rest, well past a million. That fits a group that keeps revoking assignments. Reading the consumer's log from the night.",
            Call(
                "Bash",
                {
                    "command": "kubectl -n billing logs deploy/billing-consumer --since=6h --all-containers | grep -E 'ConsumerCoordinator|AbstractCoordinator|InvoiceListener' | tail -n 320",
                    "description": "Consumer log around the rebalances",
                },
                _consumer_log(2302),
            ),
            Call(
                "Bash",
                {
                    "command": "curl -s http://billing-consumer.billing:9404/actuator/kafka-metrics | jq .",
                    "description": "Per-member consumer metrics",
                },
                _jmx(2303),
            ),
        ),
        A(
            "One member keeps getting kicked: its poll timeout expires several times a night, each time after more than five minutes without a poll, and the worst gap was close to seven minutes. Just before that there is an invoice render that took minutes on its own, a statement with about two thousand pages. Reading the listener and the config.",
            Call(
                "Read",
                {"file_path": f"{_KB}/src/main/java/com/acme/billing/InvoiceListener.java"},
                numbered(_LISTENER_JAVA),
            ),
            Call(
                "Read",
                {"file_path": f"{_KB}/src/main/resources/application.yml"},
                numbered(_APP_YML),
            ),
        ),
        A(
            "Here's the cause. Rendering is synchronous inside the listener, so the poll loop waits for every PDF in the batch. A batch of 500 records that contains one annual statement takes longer than max.poll.interval.ms (300000, five minutes), the broker evicts the member, the group rebalances with the eager range assignor, every member stops, and the annual statement gets redelivered to someone else, who then gets evicted too. That's the storm, and why a single partition ends up with nobody on it."
        ),
        U(
            "Raj Patel is the Kafka platform on-call, he's asking whether we can just add partitions to spread the load. Also what's our runway: how long until we lose data?"
        ),
        A(
            "Adding partitions won't help: the slow record still blocks whichever member gets it, and it would break ordering. On runway, the topics keep 72 hours, so the oldest unconsumed offsets on that partition need to be read within that window."
        ),
        U(
            "Right, Raj confirmed: no new partitions, we rely on per-customer ordering by key. And we have to be caught up well inside the 72 hours retention. What do you change?"
        ),
        A(
            "Three changes. Switch the assignor to CooperativeStickyAssignor so a rebalance only moves the partitions that change hands instead of stopping everyone; lower max-poll-records to 50 so a batch has fewer chances to hold a slow render; and route annual statements to their own topic.",
            Call(
                "Edit",
                {
                    "file_path": f"{_KB}/src/main/resources/application.yml",
                    "old_string": "      max-poll-records: 500",
                    "new_string": "      max-poll-records: 50",
                },
                edited(
                    f"{_KB}/src/main/resources/application.yml", "      max-poll-records: 50", 8
                ),
            ),
            Call(
                "Edit",
                {
                    "file_path": f"{_KB}/src/main/resources/application.yml",
                    "old_string": "        partition.assignment.strategy: org.apache.kafka.clients.consumer.RangeAssignor",
                    "new_string": "        partition.assignment.strategy: org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
                },
                edited(
                    f"{_KB}/src/main/resources/application.yml",
                    "        partition.assignment.strategy: org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
                    12,
                ),
            ),
        ),
        U(
            "Raj says 50 records a poll will push our commit rate over the broker's per-client request quota. Can you size it properly?"
        ),
        A(
            "Recomputing from the metrics: the members consume up to a few hundred records a second and commit once per batch, and the quota allows roughly three commits a second per client. That puts the floor a bit over 100, so I'm changing it to max-poll-records: 120 instead of 50.",
            Call(
                "Edit",
                {
                    "file_path": f"{_KB}/src/main/resources/application.yml",
                    "old_string": "      max-poll-records: 50",
                    "new_string": "      max-poll-records: 120",
                },
                edited(
                    f"{_KB}/src/main/resources/application.yml", "      max-poll-records: 120", 8
                ),
            ),
        ),
        A(
            "Now the statements. The listener sends templates starting with `statement-annual` to a new topic, statement-render, which a separate consumer group with a 30 minute poll interval reads, so the billing group never holds one.",
            Call(
                "MultiEdit",
                {
                    "file_path": f"{_KB}/src/main/java/com/acme/billing/InvoiceListener.java",
                    "edits": [
                        {
                            "old_string": "        byte[] pdf = renderer.render(event.invoiceId(), event.template());",
                            "new_string": '        if (event.template().startsWith("statement-annual")) {\n            statements.send("statement-render", event.customerId(), event);\n            return;\n        }\n        byte[] pdf = renderer.render(event.invoiceId(), event.template());',
                        }
                    ],
                },
                edited(
                    f"{_KB}/src/main/java/com/acme/billing/InvoiceListener.java",
                    '    public void onInvoice(InvoiceEvent event) {\n        if (event.template().startsWith("statement-annual")) {\n            statements.send("statement-render", event.customerId(), event);\n            return;\n        }',
                    17,
                ),
            ),
            Call(
                "Bash",
                {
                    "command": f"cd {_KB} && ./gradlew test --console=plain",
                    "description": "Consumer tests",
                },
                "\n".join(
                    f"InvoiceListenerTest > {w}_{i}() PASSED"
                    for i, w in enumerate(
                        [
                            "renders",
                            "routes",
                            "commits",
                            "skips",
                            "retries",
                            "orders",
                            "keys",
                            "saves",
                        ]
                        * 20
                    )
                )
                + "\n\nBUILD SUCCESSFUL in 1m 12s\n9 actionable tasks: 9 executed",
            ),
        ),
        A(
            "Tests pass. To summarize for Lena: the rebalances come from annual-statement renders that outlast max.poll.interval.ms; the group now uses cooperative-sticky assignment with 120 records a poll, and statements go to statement-render. No partition changes, per Raj."
        ),
    ],
    _M3_FACTS,
)

# -- m4: an over-the-air firmware update that bricks devices ------------------------------------

_FW = "/home/dev/thermo-firmware"


def _rollout_log(seed: int) -> str:
    rng = random.Random(seed)
    lines = ["rollout fw-4.12.0 started 2026-11-30T19:00:00Z target=all-eu strategy=batched"]
    for batch in range(1, 15):
        size = rng.randint(180, 260)
        failed = rng.randint(0, 3)
        if batch == 9:
            size, failed = 312, 57
        lines.append(
            f"batch {batch:02d} window={19 + batch // 4}:{(batch * 15) % 60:02d} devices={size} ok={size - failed} failed={failed} failure_rate={100 * failed / size:.1f}% paused=false"
        )
        for _ in range(22):
            dev = f"th-{rng.randint(100000, 999999)}"
            state = rng.choice(["downloaded", "verified", "rebooted", "reported"])
            lines.append(
                f"  {dev} {state} rssi=-{rng.randint(40, 92)} battery={rng.randint(31, 100)}% t={rng.randint(3, 240)}s"
            )
    lines.append(
        "rollout fw-4.12.0 halted by operator at batch 14 (auto-pause threshold failure_rate>15.0%)"
    )
    return "\n".join(lines)


def _serial(seed: int) -> str:
    def row(rng: random.Random, i: int) -> str:
        ms = 1000 + i * rng.randint(3, 9)
        return rng.choice(
            [
                f"I ({ms}) wifi: state: run -> assoc (0), rssi -{rng.randint(40, 80)}",
                f"I ({ms}) sensor: temp={rng.uniform(17, 24):.2f}C rh={rng.uniform(30, 60):.1f}%",
                f"D ({ms}) heap: free={rng.randint(60000, 120000)} min={rng.randint(40000, 60000)}",
                f"I ({ms}) mqtt: publish topic=th/state qos=1 len={rng.randint(40, 300)}",
                f"W ({ms}) ble: adv restart after {rng.randint(1, 9)} s",
            ]
        )

    return _rows(
        seed,
        330,
        row,
        {
            0.62: "I (1412) boot: Loaded app from partition at offset 0x110000\nI (1418) esp_image: segment 4: paddr=0x00200000 vaddr=0x400d0020 size=0xe0f14 (921364) map\nE (1423) flash: partition 'ota_1' image checksum mismatch: expected 0x9c41e2b7 got 0x00000000\nE (1424) boot: OTA app partition slot 1 is not bootable\nE (1430) boot: No bootable app partitions in the partition table",
        },
    )


def _size_report(seed: int) -> str:
    def row(rng: random.Random, i: int) -> str:
        return f"{rng.randint(200, 90000):>8} {rng.randint(0, 4000):>7} {rng.randint(0, 9000):>7} lib{rng.choice(['wifi', 'lwip', 'mbedtls', 'nvs', 'freertos', 'ble', 'app', 'driver'])}_{i}.a"

    return (
        "   text    data     bss filename\n"
        + _rows(seed, 170, row)
        + "\nTotal image size: 1048412 bytes (.bin may be padded larger)\nota_0/ota_1 partition size: 1048576 bytes\nsignature block: 512 bytes appended after image"
    )


def _fleet(seed: int) -> str:
    def row(rng: random.Random, i: int) -> str:
        return f"th-{rng.randint(100000, 999999)}  {rng.choice(['eu-west', 'eu-central', 'eu-north'])}  rev{rng.choice(['C', 'D'])}  fw-4.12.0  last_seen=2026-11-30T{rng.randint(19, 23)}:{rng.randint(0, 59):02d}Z  boots={rng.randint(1, 40):<3} battery={rng.randint(31, 100)}%  status=offline"

    return (
        "DEVICE      REGION      HW    FIRMWARE   LAST SEEN                    BOOTS     BATTERY       STATUS\n"
        + _rows(seed, 150, row)
    )


_PARTITIONS_CSV = """# Name,   Type, SubType, Offset,   Size
nvs,      data, nvs,     0x9000,   0x6000
otadata,  data, ota,     0xf000,   0x2000
phy_init, data, phy,     0x11000,  0x1000
ota_0,    app,  ota_0,   0x20000,  0x100000
ota_1,    app,  ota_1,   0x120000, 0x100000
storage,  data, spiffs,  0x220000, 0x1e0000
"""

_SDKCONFIG = "\n".join(
    [
        "CONFIG_ESPTOOLPY_FLASHSIZE_4MB=y",
        "CONFIG_PARTITION_TABLE_CUSTOM=y",
        'CONFIG_PARTITION_TABLE_CUSTOM_FILENAME="partitions.csv"',
        "CONFIG_SECURE_SIGNED_APPS_NO_SECURE_BOOT=y",
        "CONFIG_SECURE_SIGNED_ON_UPDATE_NO_SECURE_BOOT=y",
        "CONFIG_MBEDTLS_DEBUG=y",
        "CONFIG_MBEDTLS_DEBUG_LEVEL=3",
        "CONFIG_LOG_DEFAULT_LEVEL_INFO=y",
        "CONFIG_COMPILER_OPTIMIZATION_SIZE=y",
    ]
    + [f"CONFIG_APP_FEATURE_{i}=y" for i in range(60)]
)

_M4_FACTS = [
    Fact("person", ("Hiroshi Tanaka", "hardware"), "hardware lead"),
    Fact("person", ("Fatima Zahra", "fleet"), "fleet ops on-call"),
    Fact("number", ("41,300",), "devices in the field, said in passing"),
    Fact("number", ("3,120",), "devices that got the update, said in passing"),
    Fact("number", ("573",), "devices not checked in since, said in passing"),
    Fact("tool_output", ("18.3%",), "failure rate of the batch that failed, rollout log only"),
    Fact("tool_output", ("0x9c41e2b7",), "checksum the bootloader expected"),
    Fact("tool_output", ("1048412",), "image size, size report only"),
    Fact(
        "conclusion",
        ("signature", "cut off"),
        "image plus signature no longer fits the OTA slot, so the signature was cut off",
    ),
    Fact("decision", ("CONFIG_MBEDTLS_DEBUG",), "drop mbedTLS debug instead of repartitioning"),
    Fact("constraint", ("30%", "battery"), "no update below 30% battery"),
    Fact("number", ("canary-apac-1",), "canary group, the corrected one"),
    Fact("path", ("sdkconfig.defaults",), "config file edited"),
]

M4 = Session(
    "m4-ota-bricked-thermostats",
    [
        U(
            f"Last night's OTA of fw-4.12.0 bricked some thermostats. Hiroshi Tanaka, the hardware lead, wants a root cause before anything else ships. Fleet numbers: there are 41,300 devices in the field, the update went out to 3,120 of them before Fatima Zahra from fleet ops stopped it, and 573 haven't checked in since. Firmware repo is {_FW}."
        ),
        A(
            "Reading the rollout log first to see which batches failed.",
            Call(
                "shell",
                codex_shell("cat ops/rollouts/fw-4.12.0.log", _FW),
                codex_text(_rollout_log(2401), seconds=0.2),
            ),
        ),
        A(
            "Failures are scattered at a few per batch, except one batch where the failure rate jumped well past the auto-pause threshold, which is what stopped the rollout. Fatima sent the serial console capture from a returned unit; reading it with the build's size report.",
            Call(
                "shell",
                codex_shell(
                    "fleetctl devices --firmware fw-4.12.0 --status offline --limit 150", _FW
                ),
                codex_json(_fleet(2406), seconds=2.7),
            ),
            Call(
                "shell",
                codex_shell("cat ops/returns/th-402117-serial.txt", _FW),
                codex_json(_serial(2402), seconds=0.1),
            ),
            Call(
                "shell",
                codex_shell("idf.py size-components 2>/dev/null | tail -n 130", _FW),
                codex_text(_size_report(2403), seconds=21.6),
            ),
        ),
        A(
            "The bootloader refuses slot 1 because the image checksum doesn't match: the stored value it expected is there, but what it reads back is zeros. And the size report shows why: the image is only a few hundred bytes under the 1 MB OTA partition, and the 512-byte signature block is appended after the image, so the image plus signature no longer fits the slot. The writer stops at the partition end, the signature is cut off, and a unit that rebooted into the new slot has nothing valid to boot."
        ),
        A(
            "Checking the partition table and sdkconfig defaults.",
            Call(
                "shell",
                codex_shell("cat partitions.csv sdkconfig.defaults", _FW),
                codex_json(_PARTITIONS_CSV + "\n" + _SDKCONFIG, seconds=0.1),
            ),
        ),
        U(
            "Hiroshi says we can't change the partition table: it can only be rewritten over USB, and that means a truck roll to every site. How else do we get the image smaller?"
        ),
        A(
            "The biggest easy win is CONFIG_MBEDTLS_DEBUG: debug builds of mbedTLS carry all the debug strings, about 60 KB. Turning it off gets the image well clear of the slot with the signature, without touching the partition table.",
            Call(
                "apply_patch",
                codex_patch(
                    "sdkconfig.defaults",
                    "CONFIG_MBEDTLS_DEBUG=y\nCONFIG_MBEDTLS_DEBUG_LEVEL=3",
                    "# CONFIG_MBEDTLS_DEBUG is not set",
                ),
                codex_patched("sdkconfig.defaults"),
            ),
            Call(
                "shell",
                codex_shell("idf.py fullclean build >/dev/null && idf.py size | tail -n 4", _FW),
                codex_text(
                    "Total image size: 986112 bytes (.bin may be padded larger)\nota_0/ota_1 partition size: 1048576 bytes\nsignature block: 512 bytes appended after image",
                    seconds=188.4,
                ),
            ),
        ),
        U(
            "Fatima reminds us of the fleet rule: a device on battery must not start an update below 30% charge, and the new rollout has to start with a canary group. Use canary-eu-3."
        ),
        A(
            "The updater already checks battery; I added a test that it refuses below 30%. Setting up the rollout for canary-eu-3.",
            Call(
                "shell",
                codex_shell("pytest tools/ota -q", _FW),
                codex_json(
                    _pytest(
                        2404,
                        180,
                        "tools/ota/test_rollout.py",
                        ["battery", "canary", "batch", "pause", "threshold", "signature", "slot"],
                        "180 passed in 3.02s",
                    ),
                    seconds=3.4,
                ),
            ),
        ),
        U(
            "Sorry, not canary-eu-3: those units are the ones that just bricked. Use canary-apac-1, it's the same hardware revision."
        ),
        A(
            "Changed: the rollout for fw-4.12.1 starts with canary-apac-1, with the same auto-pause threshold.",
            Call(
                "apply_patch",
                codex_patch(
                    "ops/rollouts/fw-4.12.1.yaml", "canary: canary-eu-3", "canary: canary-apac-1"
                ),
                codex_patched("ops/rollouts/fw-4.12.1.yaml"),
            ),
            Call(
                "shell",
                codex_shell("git log --format='%h %an %ad %s' --date=short -n 100", _FW),
                codex_text(
                    _git_log(
                        2405,
                        100,
                        ["Hiroshi Tanaka", "Ilse Berg", "Marco Conti", "ci-bot"],
                        [
                            "sensor: calibrate batch {n}",
                            "wifi: reconnect backoff {n}",
                            "ble: pairing fix #{n}",
                            "build: bump idf to 5.{n}",
                            "ota: progress report {n}",
                        ],
                    ),
                    seconds=0.1,
                ),
            ),
        ),
        A(
            "Ready for Hiroshi: the bricked units failed because the image grew until its signature no longer fit in the OTA slot; fw-4.12.1 drops mbedTLS debug and leaves room, and its rollout starts on canary-apac-1."
        ),
    ],
    _M4_FACTS,
)

# -- m5: shift times moved by an hour after a daylight-saving change -----------------------------

_RS = "/home/dev/rota"


def _audit(seed: int) -> str:
    head = "ward     hospital          shifts  mismatched  max_offset_min  first_bad_shift"

    def row(rng: random.Random, i: int) -> str:
        n = rng.randint(40, 400)
        return f"W-{1100 + i:<5} {rng.choice(['St Brigid', 'Lakeside General', 'Northfield'])!s:<17} {n:>6} {rng.randint(0, 9):>11} {rng.choice([0, 60]):>15}  2026-11-{rng.randint(1, 8):02d} {rng.choice(['07:00', '19:00', '23:00'])}"

    return (
        head
        + "\n"
        + _rows(
            seed,
            199,
            row,
            {
                0.57: "W-1187  Lakeside General     388          47              60  2026-11-01 19:00"
            },
        )
        + "\n200 wards audited"
    )


def _sidekiq_log(seed: int) -> str:
    def row(rng: random.Random, i: int) -> str:
        jid = short_hash(rng, 24)
        job = rng.choice(
            ["RotaGenerateJob", "ShiftReminderJob", "PayrollExportJob", "SwapRequestMailer"]
        )
        return f"2026-11-0{rng.randint(1, 3)}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z pid={rng.randint(10, 99)} tid={short_hash(rng, 5)} class={job} jid={jid} INFO: {'done' if rng.random() < 0.5 else 'start'}: {rng.uniform(0.01, 9):.3f} sec"

    return _rows(
        seed,
        400,
        row,
        {
            0.43: "2026-11-01T06:30:04.118Z pid=31 tid=7fq2 class=RotaGenerateJob jid=4be0c1d2a9f87e6b5c4d3e2f WARN: TZInfo::AmbiguousTime: 2026-11-01 01:30:00 is an ambiguous local time.\n  /app/app/services/rota/slot_builder.rb:41:in `local_to_utc'\n  /app/app/services/rota/generator.rb:88:in `block in build_week'",
        },
    )


_SHIFT_RB = """class Shift < ApplicationRecord
  belongs_to :ward
  belongs_to :nurse, optional: true

  # starts_at_local is the wall-clock time printed on the rota, e.g. "19:00"
  validates :starts_at_local, format: { with: /\\A\\d{2}:\\d{2}\\z/ }

  def starts_at
    date.in_time_zone(ward.hospital.utc_offset).change(
      hour: starts_at_local[0, 2].to_i, min: starts_at_local[3, 2].to_i
    )
  end
end
"""

_SLOT_BUILDER_RB = "\n".join(
    ["module Rota", "  class SlotBuilder"]
    + [
        f"    def slot_{i}(date, local)\n      local_to_utc(date, local) + {i}.hours\n    end\n"
        for i in range(30)
    ]
    + [
        "    def local_to_utc(date, local)",
        "      offset = @hospital.utc_offset # fixed at generation time",
        '      Time.find_zone!(offset).parse("#{date} #{local}")',
        "    end",
        "  end",
        "end",
    ]
)

_M5_FACTS = [
    Fact("person", ("Amara Nwosu", "nursing informatics"), "chief nursing informatics officer"),
    Fact("person", ("Ben Carter", "on-call"), "Rails on-call engineer"),
    Fact("number", ("214 shifts",), "shifts affected, the corrected count"),
    Fact("number", ("23:45",), "when the rota generator runs, said in passing"),
    Fact("number", ("3 hospitals",), "hospitals affected, said in passing"),
    Fact("tool_output", ("W-1187",), "ward hit hardest, audit table only"),
    Fact("tool_output", ("TZInfo::AmbiguousTime",), "the job that blew up on the repeated hour"),
    Fact(
        "conclusion",
        ("utc_offset", "generation time"),
        "the hospital's UTC offset was fixed when the rota was generated",
    ),
    Fact("decision", ("IANA",), "store the IANA zone name on each shift"),
    Fact("constraint", ("payroll", "export format"), "payroll export format must not change"),
    Fact("number", ("batches of 1,500",), "backfill batch size, the corrected value"),
    Fact("path", ("db/migrate/20261103090000_add_time_zone_to_shifts.rb",), "migration written"),
    Fact("path", ("app/models/shift.rb",), "shift model edited"),
]

M5 = Session(
    "m5-dst-shift-scheduling",
    [
        U(
            f"Dr. Amara Nwosu, our chief nursing informatics officer, escalated this: after Sunday's clock change a bunch of night shifts show up an hour off in the rota app. It's 3 hospitals, about 190 shifts as far as we know, the rota generator runs nightly at 23:45, and Ben Carter is the Rails on-call if you need prod access. App is at {_RS}."
        ),
        A(
            "Running the audit task that compares each shift's stored start with the time printed on the paper rota.",
            Call(
                "Bash",
                {
                    "command": f"cd {_RS} && bin/rails rota:audit[2026-11-01,2026-11-08]",
                    "description": "Audit shift start times by ward",
                },
                _audit(2501),
            ),
        ),
        A(
            "Mismatches cluster in a handful of wards and all are off by exactly 60 minutes; one ward at Lakeside General is far worse than the rest with dozens of shifts wrong. Looking at the background jobs from the night of the change.",
            Call(
                "Bash",
                {
                    "command": "kubectl -n rota logs deploy/sidekiq --since=168h | grep -E 'class=(RotaGenerateJob|ShiftReminderJob|PayrollExportJob|SwapRequestMailer)' | head -n 400",
                    "description": "Sidekiq jobs around the change",
                },
                _sidekiq_log(2502),
            ),
        ),
        U(
            "Ben re-ran the count against prod: it's 214 shifts, not 190, the first number missed the weekend bank staff."
        ),
        A(
            "Thanks, 214 shifts then. One generator run also crashed on the hour that happened twice. Reading the model and the slot builder.",
            Call("Read", {"file_path": f"{_RS}/app/models/shift.rb"}, numbered(_SHIFT_RB)),
            Call(
                "Read",
                {"file_path": f"{_RS}/app/services/rota/slot_builder.rb"},
                numbered(_SLOT_BUILDER_RB),
            ),
            Call(
                "Grep",
                {
                    "pattern": "utc_offset",
                    "path": f"{_RS}/app",
                    "output_mode": "content",
                    "-n": True,
                },
                f"{_RS}/app/models/shift.rb:8:    date.in_time_zone(ward.hospital.utc_offset).change(\n{_RS}/app/services/rota/slot_builder.rb:122:      offset = @hospital.utc_offset # fixed at generation time\n{_RS}/app/models/hospital.rb:14:  def utc_offset = zone.now.utc_offset",
            ),
        ),
        A(
            "Found it. Both places convert the rota's wall-clock time using the hospital's utc_offset, which is a fixed number of seconds taken at generation time. The generator runs days ahead, so shifts generated before Sunday for dates after it got the summer offset: an hour off. And the one crash is the 01:30 slot on the Sunday itself, which exists twice in that zone."
        ),
        U(
            "What's the fix? And note the payroll export format can't change at all, the payroll vendor parses it by column position."
        ),
        A(
            "Store the zone, not the offset: each shift gets a time_zone column holding the hospital's IANA name (America/Chicago), and starts_at is computed by that zone for the shift's own date, so the offset is always the one in force that day. The payroll export reads starts_at, and its format stays exactly as it is. For the repeated hour, the first occurrence is taken, which is how the paper rota reads. Writing the migration with a backfill in batches of 5,000.",
            Call(
                "Write",
                {
                    "file_path": f"{_RS}/db/migrate/20261103090000_add_time_zone_to_shifts.rb",
                    "content": 'class AddTimeZoneToShifts < ActiveRecord::Migration[7.1]\n  disable_ddl_transaction!\n\n  def up\n    add_column :shifts, :time_zone, :string\n    Shift.in_batches(of: 5_000) do |batch|\n      batch.update_all("time_zone = (SELECT h.time_zone FROM wards w JOIN hospitals h ON h.id = w.hospital_id WHERE w.id = shifts.ward_id)")\n    end\n  end\nend\n',
                },
                written(f"{_RS}/db/migrate/20261103090000_add_time_zone_to_shifts.rb"),
            ),
            Call(
                "Edit",
                {
                    "file_path": f"{_RS}/app/models/shift.rb",
                    "old_string": "    date.in_time_zone(ward.hospital.utc_offset).change(",
                    "new_string": "    ActiveSupport::TimeZone[time_zone].local(date.year, date.month, date.day).change(",
                },
                edited(
                    f"{_RS}/app/models/shift.rb",
                    "  def starts_at\n    ActiveSupport::TimeZone[time_zone].local(date.year, date.month, date.day).change(",
                    7,
                ),
            ),
        ),
        U(
            "Ben says the replica fell behind by minutes last time someone updated 5,000 rows at a time on shifts. Go smaller."
        ),
        A(
            "Going down to batches of 1,500 with a short sleep between them, which kept the replica within a couple of seconds in the last backfill on that table.",
            Call(
                "Edit",
                {
                    "file_path": f"{_RS}/db/migrate/20261103090000_add_time_zone_to_shifts.rb",
                    "old_string": "    Shift.in_batches(of: 5_000) do |batch|",
                    "new_string": "    Shift.in_batches(of: 1_500) do |batch|\n      sleep 0.2 # keeps the replica within seconds",
                },
                edited(
                    f"{_RS}/db/migrate/20261103090000_add_time_zone_to_shifts.rb",
                    "    Shift.in_batches(of: 1_500) do |batch|\n      sleep 0.2 # keeps the replica within seconds",
                    6,
                ),
            ),
            Call(
                "Bash",
                {
                    "command": f"cd {_RS} && bundle exec rspec spec/models/shift_spec.rb spec/services/rota --format progress",
                    "description": "Shift and rota specs",
                },
                "Randomized with seed 41177\n"
                + "." * 2400
                + "\n\nFinished in 38.41 seconds (files took 4.02 seconds to load)\n2400 examples, 0 failures",
            ),
        ),
        A(
            "Specs pass, including new ones for the Sunday of the change and the repeated 01:30. For Dr. Nwosu: 214 shifts across 3 hospitals were an hour off because the rota fixed each hospital's UTC offset when it generated shifts; they now carry the IANA zone, the backfill runs in batches of 1,500, and the payroll export is unchanged."
        ),
    ],
    _M5_FACTS,
)

SESSIONS = [M1, M2, M3, M4, M5]
