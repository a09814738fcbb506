# ruff: noqa: E501  (scripted session data: long tool outputs read better unwrapped)
"""Set G: held out (written before it was measured; only its totals are read).

Five domains no other set uses: a Kafka consumer lag incident, an iOS crash triage, a GPU driver
upgrade on a training cluster, a payout reconciliation bug and a search index rebuild. Each session
is long (tens of thousands of tokens): outputs of 50-300 lines (configs, logs, git logs, test runs,
tables of offsets, node reports) with the planted value in the middle of many values shaped like
it, several files per turn, Claude Code shapes (Bash, Read, Edit, Write, Grep) and Codex shapes
(shell argv with both output envelopes, apply_patch). Values are restated and corrected (the
correction is the fact) or superseded (the later one is the fact); reasons, limits, people and
conclusions are worded differently in each session.
"""

from __future__ import annotations

import json
import random

from tests.perf.quality.script import (
    A,
    Call,
    Fact,
    Session,
    U,
    bury,
    chatter,
    codex_json,
    codex_patch,
    codex_patched,
    codex_shell,
    codex_text,
    edited,
    numbered,
    short_hash,
)

# -- shared shapes -----------------------------------------------------------------------------


def _git_log(
    seed: int, count: int, authors: list[str], subjects: list[str], planted: dict[float, str]
) -> str:
    rng = random.Random(seed)
    lines = []
    for i in range(count):
        day = 28 - i * 27 // count
        subject = rng.choice(subjects).format(n=rng.randint(2, 4800))
        lines.append(f"{short_hash(rng)} 2026-11-{day:02d} {rng.choice(authors):<16} {subject}")
    return bury(lines, planted)


# -- g1: Kafka consumer lag --------------------------------------------------------------------

_K_AUTHORS = ["mateo.r", "priya.raman", "j.okafor", "lena.w", "svc-renovate", "t.nguyen"]
_K_SUBJECTS = [
    "Bump jackson-databind to 2.17.{n}",
    "Add enrichment metrics for tax region lookups",
    "Tune producer linger.ms for audit topic",
    "Fix NPE when merchant has no payout profile (#{n})",
    "Refactor OrderEnvelope mapper",
    "Log partition assignment on rebalance",
    "Move schema registry URL to config",
    "Retry transient 503 from address service",
    "Drop unused avro field shipping_hint",
    "Update helm chart resources for staging",
    "Merge pull request #{n} from shop/enricher-cleanup",
    "Increase test timeout for embedded kafka",
]


def _consumer_groups(seed: int, groups: tuple[tuple[str, int], ...]) -> str:
    rng = random.Random(seed)
    header = "GROUP                 TOPIC      PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG      CONSUMER-ID                                HOST            CLIENT-ID"
    lines = [header]
    for group, members in groups:
        for p in range(48):
            end = rng.randint(14_000_000, 19_600_000)
            lag = rng.choice([0, 0, 0, 1, 2, 4, 9, 17, 31, 64, 118, 240, 506, 877, 1309, 2214])
            if group == "orders-enricher" and p == 7:
                lag = 1843907
            member = p % members + 1
            lines.append(
                f"{group:<21} orders.v3  {p:<9}  {end - lag:<14}  {end:<14}  {lag:<7}  "
                f"consumer-{group}-{member}-{short_hash(rng, 8)}-{short_hash(rng, 4)}  "
                f"/10.42.{rng.randint(0, 9)}.{rng.randint(2, 250):<5} consumer-{group}-{member}"
            )
    return "\n".join(lines)


def _enricher_log(seed: int, count: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    threads = [f"orders-enricher-consumer-{i}" for i in range(1, 13)]
    lines = []
    for i in range(count):
        ts = f"2026-12-07 09:{14 + i * 40 // count:02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}"
        kind = rng.random()
        thread = rng.choice(threads)
        if kind < 0.55:
            lines.append(
                f"{ts} INFO  [{thread}] c.s.e.EnricherConsumer - batch partition={rng.randint(0, 47)} records={rng.choice([500, 500, 500, 412, 87])} took={rng.randint(40, 980)}ms"
            )
        elif kind < 0.75:
            lines.append(
                f"{ts} DEBUG [{thread}] c.s.e.MerchantLookup - profile merchant={rng.randint(10000, 99999)} source=risk-svc latency={rng.randint(3, 190)}ms"
            )
        elif kind < 0.88:
            lines.append(
                f"{ts} INFO  [{thread}] o.a.k.c.c.i.ConsumerCoordinator - [Consumer clientId=consumer-orders-enricher-{rng.randint(1, 12)}, groupId=orders-enricher] Setting offset for partition orders.v3-{rng.randint(0, 47)} to the committed offset FetchPosition{{offset={rng.randint(14_000_000, 19_000_000)}, offsetEpoch=Optional[41]}}"
            )
        else:
            lines.append(
                f"{ts} WARN  [{thread}] c.s.e.RiskClient - slow response from risk-svc merchant={rng.randint(10000, 99999)} latency={rng.randint(800, 4200)}ms"
            )
    return bury(lines, planted)


def _kotlin(seed: int, count: int, cls: str) -> str:
    rng = random.Random(seed)
    nouns = [
        "order",
        "merchant",
        "envelope",
        "taxRegion",
        "address",
        "lineItem",
        "payoutProfile",
        "currency",
    ]
    lines = [f"class {cls}Support {{"]
    for i in range(count):
        a, b = rng.choice(nouns), rng.choice(nouns)
        cap = a[0].upper() + a[1:]
        lines += [
            f"    fun map{cap}{i}({b}: {b[0].upper() + b[1:]}Dto): {cap}? {{",
            f"        if ({b}.id.isBlank()) return null",
            f"        val normalized = normalizer.normalize({b})",
            f'        metrics.counter("enricher.{a}.mapped").increment()',
            f"        return {cap}(id = normalized.id, version = {rng.randint(1, 9)})",
            "    }",
            "",
        ]
    return "\n".join([*lines, "}"])


def _values_yaml(seed: int) -> str:
    rng = random.Random(seed)
    head = """# orders-enricher, production values
replicaCount: 12
image:
  repository: registry.shop.internal/orders/orders-enricher
  tag: "2026.12.07-1"
  pullPolicy: IfNotPresent
resources:
  requests:
    cpu: "1500m"
    memory: 3Gi
  limits:
    cpu: "3"
    memory: 4Gi
podDisruptionBudget:
  maxUnavailable: 2
env:
  KAFKA_BOOTSTRAP_SERVERS: "kafka-0.kafka:9093,kafka-1.kafka:9093,kafka-2.kafka:9093"
  KAFKA_GROUP_ID: "orders-enricher"
  KAFKA_TOPIC: "orders.v3"
  KAFKA_MAX_POLL_RECORDS: "500"
  KAFKA_MAX_POLL_INTERVAL_MS: "300000"
  KAFKA_SESSION_TIMEOUT_MS: "45000"
  KAFKA_HEARTBEAT_INTERVAL_MS: "3000"
  KAFKA_FETCH_MAX_WAIT_MS: "500"
  KAFKA_AUTO_OFFSET_RESET: "none"
  RISK_SVC_URL: "http://risk-svc.risk:8080"
  RISK_SVC_TIMEOUT_MS: "2500"
  ADDRESS_SVC_URL: "http://address-svc.geo:8080"
"""
    extra = []
    for i in range(70):
        key = rng.choice(["FEATURE", "LIMIT", "POOL", "CACHE", "TIMEOUT", "RETRY"])
        extra.append(
            f'  {key}_{rng.choice(["TAX", "ADDR", "AUDIT", "FX", "PROMO", "LOYALTY"])}_{i}: "{rng.choice(["true", "false", str(rng.randint(1, 60000))])}"'
        )
    tail = """nodeSelector:
  pool: stream-workers
tolerations:
  - key: dedicated
    operator: Equal
    value: streaming
    effect: NoSchedule
serviceMonitor:
  enabled: true
  interval: 15s"""
    return head + "\n".join(extra) + "\n" + tail


def _thread_dump(seed: int) -> str:
    rng = random.Random(seed)
    lines = ["Full thread dump OpenJDK 64-Bit Server VM (21.0.5+11-LTS mixed mode, sharing):", ""]
    for i in range(1, 13):
        busy = i == 8
        lines.append(
            f'"orders-enricher-consumer-{i}" #{40 + i} prio=5 os_prio=0 cpu={rng.randint(1000, 90000)}.{rng.randint(10, 99)}ms elapsed=5211.{rng.randint(10, 99)}s tid=0x00007f{short_hash(rng, 10)} nid={rng.randint(100, 999)} {"runnable" if busy else "waiting on condition"}'
        )
        if busy:
            lines += [
                "   java.lang.Thread.State: RUNNABLE",
                "\tat sun.nio.ch.Net.poll(java.base@21.0.5/Native Method)",
                "\tat sun.nio.ch.NioSocketImpl.timedRead(java.base@21.0.5/NioSocketImpl.java:288)",
                "\tat java.net.http.HttpClient.send(java.net.http@21.0.5/HttpClient.java:907)",
                "\tat com.shop.enricher.RiskClient.get(RiskClient.kt:61)",
                "\tat com.shop.enricher.MerchantLookup.fetchRiskProfile(MerchantLookup.kt:88)",
                "\tat com.shop.enricher.MerchantLookup.enrich(MerchantLookup.kt:52)",
                "\tat com.shop.enricher.EnricherConsumer.handle(EnricherConsumer.kt:117)",
                "\tat com.shop.enricher.EnricherConsumer.pollLoop(EnricherConsumer.kt:74)",
            ]
        else:
            lines += [
                "   java.lang.Thread.State: TIMED_WAITING (parking)",
                "\tat jdk.internal.misc.Unsafe.park(java.base@21.0.5/Native Method)",
                "\tat org.apache.kafka.clients.consumer.internals.ConsumerNetworkClient.poll(ConsumerNetworkClient.java:280)",
                "\tat org.apache.kafka.clients.consumer.KafkaConsumer.poll(KafkaConsumer.java:1209)",
                "\tat com.shop.enricher.EnricherConsumer.pollLoop(EnricherConsumer.kt:69)",
            ]
        lines.append("")
    for name in [
        "kafka-producer-network-thread | audit",
        "micrometer-registry-push",
        "HikariPool-1 housekeeper",
        "Signal Dispatcher",
        "C2 CompilerThread0",
        "G1 Conc#0",
    ]:
        lines += [
            f'"{name}" #{rng.randint(2, 39)} daemon prio=5 tid=0x00007f{short_hash(rng, 10)} nid={rng.randint(100, 999)} waiting on condition',
            "   java.lang.Thread.State: WAITING (parking)",
            "",
        ]
    return "\n".join(lines)


def _hot_keys(seed: int) -> str:
    rng = random.Random(seed)
    counts = sorted((rng.randint(4, 61) for _ in range(44)), reverse=True)
    lines = ["   3188 merchant-88213"] + [
        f"{c:7d} merchant-{rng.randint(10000, 99999)}" for c in counts
    ]
    return "\n".join(lines)


def _gradle_test(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    classes = [
        "EnricherConsumerTest",
        "MerchantLookupTest",
        "OrderEnvelopeMapperTest",
        "RiskClientTest",
        "TaxRegionResolverTest",
        "AddressNormalizerTest",
    ]
    verbs = ["maps", "skips", "retries", "caches", "rejects", "commits", "resolves", "logs"]
    objects = [
        "emptyMerchant",
        "blankTaxRegion",
        "lateOrder",
        "duplicateEnvelope",
        "unknownCurrency",
        "slowRisk",
        "rebalance",
        "nullAddress",
    ]
    lines = ["> Task :compileKotlin", "> Task :compileTestKotlin", "> Task :test", ""]
    for _ in range(150):
        lines.append(
            f"{rng.choice(classes)} > {rng.choice(verbs)}{rng.choice(objects)[0].upper()}{rng.choice(objects)[1:]}() PASSED"
        )
    lines += ["", "BUILD SUCCESSFUL in 1m 12s", "9 actionable tasks: 4 executed, 5 up-to-date"]
    return bury(lines, planted)


G1 = Session(
    "g1-kafka-lag",
    [
        U(
            "orders-enricher has been lagging since this morning's deploy, the lag alert on orders.v3 has fired for 40 minutes. Priya Raman is the data platform on-call this week, so loop her in before anything touches the brokers. Can you find out what's going on?"
        ),
        A(
            "Looking at the consumer groups on the topic and the service's production values first.",
            Call(
                "Bash",
                {
                    "command": "kafka-consumer-groups.sh --bootstrap-server kafka-0.kafka:9093 --describe --all-groups | grep orders.v3",
                    "description": "Describe consumer groups reading orders.v3",
                },
                _consumer_groups(1101, (("orders-search-sync", 8), ("orders-enricher", 12))),
            ),
            Call(
                "Read",
                {"file_path": "/srv/orders-enricher/deploy/helm/orders-enricher/values-prod.yaml"},
                numbered(_values_yaml(1102)),
            ),
        ),
        A(
            "One partition of the enricher group is far behind the rest; the search-sync group on the same topic is keeping up. Let me see what the consumers are logging.",
            Call(
                "Bash",
                {
                    "command": "kubectl -n orders logs deploy/orders-enricher --since=45m --all-containers | tail -n 120",
                    "description": "Recent enricher logs",
                },
                _enricher_log(
                    1103,
                    112,
                    {
                        0.46: "2026-12-07 09:31:07.902 WARN  [kafka-coordinator-heartbeat-thread | orders-enricher] o.a.k.c.c.i.ConsumerCoordinator - [Consumer clientId=consumer-orders-enricher-8, groupId=orders-enricher] consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, which typically implies that the poll loop is spending too much time processing messages.",
                        0.47: "2026-12-07 09:31:08.114 ERROR [orders-enricher-consumer-8] c.s.e.EnricherConsumer - commit failed for orders.v3-7\norg.apache.kafka.clients.consumer.CommitFailedException: Offset commit cannot be completed since the consumer is not part of an active group for auto partition assignment; it is likely that the consumer was kicked out of the group.\n\tat org.apache.kafka.clients.consumer.internals.ConsumerCoordinator.sendOffsetCommitRequest(ConsumerCoordinator.java:1351)\n\tat org.apache.kafka.clients.consumer.KafkaConsumer.commitSync(KafkaConsumer.java:1480)\n\tat com.shop.enricher.EnricherConsumer.pollLoop(EnricherConsumer.kt:81)",
                        0.81: "2026-12-07 09:47:52.330 INFO  [orders-enricher-consumer-8] o.a.k.c.c.i.ConsumerCoordinator - [Consumer clientId=consumer-orders-enricher-8, groupId=orders-enricher] Revoke previously assigned partitions orders.v3-7, orders.v3-19, orders.v3-31, orders.v3-43",
                    },
                ),
            ),
            Call(
                "Grep",
                {
                    "pattern": "max.poll|MAX_POLL",
                    "path": "/srv/orders-enricher",
                    "output_mode": "content",
                    "-n": True,
                },
                'deploy/helm/orders-enricher/values-prod.yaml:20:  KAFKA_MAX_POLL_RECORDS: "500"\ndeploy/helm/orders-enricher/values-prod.yaml:21:  KAFKA_MAX_POLL_INTERVAL_MS: "300000"\ndeploy/helm/orders-enricher/values-staging.yaml:20:  KAFKA_MAX_POLL_RECORDS: "500"\ndeploy/helm/orders-enricher/values-staging.yaml:21:  KAFKA_MAX_POLL_INTERVAL_MS: "300000"\nsrc/main/kotlin/com/shop/enricher/KafkaConfig.kt:33:        props[ConsumerConfig.MAX_POLL_RECORDS_CONFIG] = env.int("KAFKA_MAX_POLL_RECORDS", 500)\nsrc/main/kotlin/com/shop/enricher/KafkaConfig.kt:34:        props[ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG] = env.int("KAFKA_MAX_POLL_INTERVAL_MS", 300000)\nsrc/test/kotlin/com/shop/enricher/EnricherConsumerTest.kt:58:        env["KAFKA_MAX_POLL_RECORDS"] = "5"',
            ),
        ),
        A(
            "The consumer that owns that partition gets kicked out of the group, rejoins, and the cycle repeats. Checking what changed in the last deploys.",
            Call(
                "Bash",
                {
                    "command": "git -C /srv/orders-enricher log --since=2026-11-01 --format='%h %ad %an %s' --date=short | head -120",
                    "description": "Recent commits",
                },
                _git_log(
                    1104,
                    110,
                    _K_AUTHORS,
                    _K_SUBJECTS,
                    {
                        0.08: "3f9c2ab 2026-12-06 j.okafor         Call risk service per record instead of per batch"
                    },
                ),
            ),
        ),
        U(
            "Whatever you find, don't reset offsets on the production group. We can't skip orders, and replaying them double-credits loyalty points."
        ),
        A(
            "Understood, offsets stay where they are. Reading the lookup and the consumer loop.",
            Call(
                "Read",
                {
                    "file_path": "/srv/orders-enricher/src/main/kotlin/com/shop/enricher/MerchantLookup.kt"
                },
                numbered(
                    "package com.shop.enricher\n\nimport java.time.Duration\nimport io.micrometer.core.instrument.MeterRegistry\n\n"
                    + _kotlin(1105, 6, "MerchantLookup")
                    + '\n\nclass MerchantLookup(private val risk: RiskClient, private val metrics: MeterRegistry) {\n    fun enrich(order: OrderEnvelope): EnrichedOrder {\n        val profile = fetchRiskProfile(order.merchantId)\n        return EnrichedOrder(order, profile.tier, profile.holdDays)\n    }\n\n    private fun fetchRiskProfile(merchantId: String): RiskProfile =\n        metrics.timer("enricher.risk.lookup").recordCallable { risk.get(merchantId) }!!\n}\n'
                    + _kotlin(1106, 5, "RiskProfile")
                ),
            ),
            Call(
                "Read",
                {
                    "file_path": "/srv/orders-enricher/src/main/kotlin/com/shop/enricher/EnricherConsumer.kt"
                },
                numbered(_kotlin(1107, 14, "EnricherConsumer")),
            ),
        ),
        A(
            "Taking a thread dump of the pod that holds the slow partition and sampling the keys on it.",
            Call(
                "Bash",
                {
                    "command": "kubectl -n orders exec orders-enricher-7c9d5b8f4-x2kqp -- jcmd 1 Thread.print",
                    "description": "Thread dump",
                },
                _thread_dump(1108),
            ),
            Call(
                "Bash",
                {
                    "command": "kcat -b kafka-0.kafka:9093 -C -t orders.v3 -p 7 -o -5000 -e -f '%k\\n' | sort | uniq -c | sort -rn | head -45",
                    "description": "Key counts on partition 7",
                },
                _hot_keys(1109),
            ),
        ),
        A(
            "Here is what's happening: the lag is confined to partition 7 because merchant 88213 is a hot key that hashes there, and since the change to call the risk service for every record, each of its orders waits on a blocking HTTP call. That consumer exceeds the poll interval, gets evicted, and the partition goes back to the start of the uncommitted batch. The other 47 partitions are fine."
        ),
        U(
            "For sizing: orders.v3 peaks at about 12,400 messages/s on weekday evenings. Could we just add partitions and more pods?"
        ),
        A(
            "I'd rather not. Decision: put a Caffeine cache in front of the risk profile lookup instead of adding partitions, because adding partitions changes which partition each key maps to and would break per-merchant ordering for orders already in flight. A cache also removes the per-record call for every merchant, not just the hot one. I'll start with a TTL of 5 minutes and a 50k-entry cap."
        ),
        U(
            "Fine by me. Stay on kafka-clients 3.6 though, the platform BOM pins it and they won't bump before Q1. Don't touch anything Kafka-related in the build file."
        ),
        A(
            "Adding only the cache dependency and wrapping the lookup.",
            Call(
                "Read",
                {"file_path": "/srv/orders-enricher/build.gradle.kts"},
                numbered(
                    'plugins {\n    kotlin("jvm") version "2.0.21"\n    id("com.google.cloud.tools.jib") version "3.4.4"\n}\n\ndependencies {\n    implementation(platform("com.shop.platform:bom:2026.10.2"))\n    implementation("org.apache.kafka:kafka-clients") // 3.6.2 via BOM\n    implementation("io.micrometer:micrometer-registry-prometheus")\n    implementation("com.fasterxml.jackson.module:jackson-module-kotlin")\n    implementation("ch.qos.logback:logback-classic")\n'
                    + "\n".join(
                        f'    implementation("com.shop.libs:lib-{n}:1.{i}.{i * 3 % 7}")'
                        for i, n in enumerate(
                            [
                                "tax",
                                "geo",
                                "audit",
                                "money",
                                "ids",
                                "tracing",
                                "flags",
                                "schemas",
                                "avro-helpers",
                                "http",
                            ]
                        )
                    )
                    + '\n    testImplementation("org.junit.jupiter:junit-jupiter:5.11.3")\n    testImplementation("org.testcontainers:kafka:1.20.4")\n    testImplementation("io.mockk:mockk:1.13.13")\n}\n\ntasks.test {\n    useJUnitPlatform()\n    maxHeapSize = "2g"\n}\n'
                ),
            ),
            Call(
                "Edit",
                {
                    "file_path": "/srv/orders-enricher/build.gradle.kts",
                    "old_string": '    implementation("ch.qos.logback:logback-classic")',
                    "new_string": '    implementation("ch.qos.logback:logback-classic")\n    implementation("com.github.ben-manes.caffeine:caffeine:3.1.8")',
                },
                edited(
                    "/srv/orders-enricher/build.gradle.kts",
                    '    implementation("ch.qos.logback:logback-classic")\n    implementation("com.github.ben-manes.caffeine:caffeine:3.1.8")',
                    11,
                ),
            ),
            Call(
                "Edit",
                {
                    "file_path": "/srv/orders-enricher/src/main/kotlin/com/shop/enricher/MerchantLookup.kt",
                    "old_string": '    private fun fetchRiskProfile(merchantId: String): RiskProfile =\n        metrics.timer("enricher.risk.lookup").recordCallable { risk.get(merchantId) }!!',
                    "new_string": '    private val profiles: LoadingCache<String, RiskProfile> = Caffeine.newBuilder()\n        .maximumSize(50_000)\n        .expireAfterWrite(Duration.ofMinutes(5))\n        .recordStats()\n        .build { id -> metrics.timer("enricher.risk.lookup").recordCallable { risk.get(id) }!! }\n\n    private fun fetchRiskProfile(merchantId: String): RiskProfile = profiles.get(merchantId)',
                },
                edited(
                    "/srv/orders-enricher/src/main/kotlin/com/shop/enricher/MerchantLookup.kt",
                    '    private val profiles: LoadingCache<String, RiskProfile> = Caffeine.newBuilder()\n        .maximumSize(50_000)\n        .expireAfterWrite(Duration.ofMinutes(5))\n        .recordStats()\n        .build { id -> metrics.timer("enricher.risk.lookup").recordCallable { risk.get(id) }!! }\n\n    private fun fetchRiskProfile(merchantId: String): RiskProfile = profiles.get(merchantId)',
                    56,
                ),
            ),
        ),
        A(
            "Writing a test that the lookup calls the risk service once per merchant within the TTL.",
            Call(
                "Write",
                {
                    "file_path": "/srv/orders-enricher/src/test/kotlin/com/shop/enricher/MerchantLookupCacheTest.kt",
                    "content": 'package com.shop.enricher\n\nclass MerchantLookupCacheTest {\n    @Test\n    fun `one risk call per merchant within the ttl`() {\n        val risk = mockk<RiskClient>()\n        every { risk.get("88213") } returns RiskProfile("B", 2)\n        val lookup = MerchantLookup(risk, SimpleMeterRegistry())\n        repeat(500) { lookup.enrich(order(merchant = "88213")) }\n        verify(exactly = 1) { risk.get("88213") }\n    }\n}\n',
                },
                "File created successfully at: /srv/orders-enricher/src/test/kotlin/com/shop/enricher/MerchantLookupCacheTest.kt",
            ),
            Call(
                "Bash",
                {
                    "command": "cd /srv/orders-enricher && ./gradlew test --console=plain 2>&1 | tail -n 170",
                    "description": "Run the test suite",
                },
                _gradle_test(
                    1110,
                    {
                        0.5: "MerchantLookupCacheTest > one risk call per merchant within the ttl() PASSED"
                    },
                ),
            ),
        ),
        U(
            "Also raise max.poll.interval.ms to 600000 so the group stops rebalancing while the cache warms. Wait, no: make it 420000. Priya says anything above 7 minutes trips the broker-side stuck-consumer alert."
        ),
        A(
            "Setting KAFKA_MAX_POLL_INTERVAL_MS to 420000 in the production values, leaving staging at its default.",
            Call(
                "Edit",
                {
                    "file_path": "/srv/orders-enricher/deploy/helm/orders-enricher/values-prod.yaml",
                    "old_string": '  KAFKA_MAX_POLL_INTERVAL_MS: "300000"',
                    "new_string": '  KAFKA_MAX_POLL_INTERVAL_MS: "420000"',
                },
                edited(
                    "/srv/orders-enricher/deploy/helm/orders-enricher/values-prod.yaml",
                    '  KAFKA_MAX_POLL_RECORDS: "500"\n  KAFKA_MAX_POLL_INTERVAL_MS: "420000"\n  KAFKA_SESSION_TIMEOUT_MS: "45000"',
                    20,
                ),
            ),
        ),
        A(
            "Deploying to staging and replaying a copy of this morning's traffic there.",
            Call(
                "Bash",
                {
                    "command": "helm upgrade --install orders-enricher deploy/helm/orders-enricher -n orders-staging -f deploy/helm/orders-enricher/values-staging.yaml --set image.tag=2026.12.07-2 --wait && kubectl -n orders-staging logs deploy/orders-enricher --since=10m | tail -n 70",
                    "description": "Deploy to staging and read logs",
                },
                'Release "orders-enricher" has been upgraded. Happy Helming!\nNAME: orders-enricher\nLAST DEPLOYED: Mon Dec  7 10:41:12 2026\nNAMESPACE: orders-staging\nSTATUS: deployed\nREVISION: 88\n'
                + _enricher_log(1111, 70, {}),
            ),
        ),
        U(
            "Talked to the risk team: profiles change at most hourly and they're fine with some staleness. Make the TTL 30 minutes instead of 5."
        ),
        A(
            "Changed expireAfterWrite to 30 minutes.",
            Call(
                "Edit",
                {
                    "file_path": "/srv/orders-enricher/src/main/kotlin/com/shop/enricher/MerchantLookup.kt",
                    "old_string": "        .expireAfterWrite(Duration.ofMinutes(5))",
                    "new_string": "        .expireAfterWrite(Duration.ofMinutes(30))",
                },
                edited(
                    "/srv/orders-enricher/src/main/kotlin/com/shop/enricher/MerchantLookup.kt",
                    "        .maximumSize(50_000)\n        .expireAfterWrite(Duration.ofMinutes(30))\n        .recordStats()",
                    57,
                ),
            ),
            Call(
                "Bash",
                {
                    "command": "kafka-consumer-groups.sh --bootstrap-server kafka-staging-0.kafka:9093 --describe --group orders-enricher",
                    "description": "Staging lag after the change",
                },
                _consumer_groups(1112, (("orders-enricher", 12),)).replace("1843907", "212"),
            ),
        ),
        A(
            "Staging keeps up under the replayed load. Open items: Priya approves the production rollout, then we deploy to prod and watch partition 7 drain; offsets are left alone throughout."
        ),
    ],
    [
        Fact("person", ("Priya", "data platform"), "on-call person and role"),
        Fact("tool_output", ("1843907",), "lag of the stuck partition, mid-table"),
        Fact("tool_output", ("CommitFailedException",), "error in a long log"),
        Fact("tool_output", ("3f9c2ab",), "the commit that caused it, in a long git log"),
        Fact("tool_output", ("fetchRiskProfile",), "frame the busy consumer thread sits in"),
        Fact("number", ("12,400",), "peak rate, said only by the user"),
        Fact("conclusion", ("partition 7", "hot key"), "cause, concluded in a reply"),
        Fact("decision", ("Caffeine", "ordering"), "cache rather than partitions, and why"),
        Fact("constraint", ("reset offsets",), "never reset offsets"),
        Fact("constraint", ("kafka-clients", "3.6"), "kafka-clients version pinned"),
        Fact("number", ("420000",), "poll interval, the corrected value"),
        Fact("number", ("30 minutes",), "cache TTL, the later value"),
        Fact("path", ("MerchantLookup.kt",), "file edited"),
        Fact("path", ("values-prod.yaml",), "values file edited"),
    ],
)

# -- g2: iOS crash triage (Codex shapes) -------------------------------------------------------

_IOS = "/Users/dev/src/wayfare-ios"
_I_AUTHORS = ["hana.k", "dmitri.v", "ruth.o", "kenji.a", "bot-fastlane", "amara.e"]
_I_SUBJECTS = [
    "Localize trip sharing sheet (#{n})",
    "Bump version to 6.14.0",
    "Fix dark mode colors on booking card",
    "Add snapshot tests for itinerary header",
    "Use async image loader in MapPinView",
    "Merge pull request #{n} from wayfare/ios-release-6.14",
    "Remove deprecated UIWebView fallback",
    "Update Podfile.lock",
    "Track timeline scroll depth",
    "Fix VoiceOver label for seat picker",
    "Migrate SettingsView to SwiftUI",
    "Cache airline logos on disk",
]


def _crash_report(seed: int) -> str:
    rng = random.Random(seed)
    head = """Incident Identifier: 7E3B0C52-91A4-4C1D-8F3E-2D6A90B1C744
Hardware Model:      iPhone15,2
Process:             Wayfare [2281]
Path:                /private/var/containers/Bundle/Application/1F0D2C8A-6B7E-4B7B-9E41-5A3C2F8D1E60/Wayfare.app/Wayfare
Identifier:          com.wayfare.ios
Version:             6.14.0 (6140217)
Code Type:           ARM-64 (Native)
Parent Process:      launchd [1]
Date/Time:           2026-12-06 19:42:10.5512 +0100
OS Version:          iPhone OS 17.4.1 (21E236)
Report Version:      104

Exception Type:  EXC_BAD_ACCESS (SIGSEGV)
Exception Subtype: KERN_INVALID_ADDRESS at 0x0000000000000010
Exception Codes: 0x0000000000000001, 0x0000000000000010
VM Region Info: 0x10 is not in any region.  Bytes before following region: 4337565680
Termination Reason: SIGNAL 11 Segmentation fault: 11
Triggered by Thread:  0
"""
    threads = []
    frames0 = [
        "libobjc.A.dylib               \t0x0000000191c21c20 objc_msgSend + 32",
        "UIKitCore                     \t0x0000000194a1b5f4 -[UICollectionView _updateWithItems:tentativelyPerformedAnimations:] + 612",
        "UIKitCore                     \t0x0000000194a1a0c8 -[UICollectionView _endItemAnimationsWithInvalidationContext:tentativelyForReordering:animator:collectionViewAnimator:] + 3380",
        "UIKitCore                     \t0x00000001949f73a4 __UIDiffableDataSourceApplySnapshot + 1044",
        "Wayfare                       \t0x0000000102f41c88 TimelineDiffableDataSource.applySnapshot(_:animated:) + 412 (TimelineDiffableDataSource.swift:63)",
        "Wayfare                       \t0x0000000102f3e914 TimelineStore.reload() + 288 (TimelineStore.swift:141)",
        "Wayfare                       \t0x0000000102f3e2b0 closure #1 in TimelineStore.refresh(tripID:) + 96 (TimelineStore.swift:118)",
        "libdispatch.dylib             \t0x00000001a0b7a13c _dispatch_call_block_and_release + 32",
        "libdispatch.dylib             \t0x00000001a0b7bdd4 _dispatch_client_callout + 20",
        "libdispatch.dylib             \t0x00000001a0b8a5a4 _dispatch_main_queue_drain + 984",
        "CoreFoundation                \t0x0000000198c4e1b8 __CFRUNLOOP_IS_SERVICING_THE_MAIN_DISPATCH_QUEUE__ + 16",
        "GraphicsServices              \t0x00000001d79e61a8 GSEventRunModal + 164",
        "UIKitCore                     \t0x000000019b3a0ae8 UIApplicationMain + 340",
        "Wayfare                       \t0x0000000102a8e4c0 main + 64 (AppDelegate.swift:14)",
    ]
    threads.append(
        "Thread 0 name:   Dispatch queue: com.apple.main-thread\nThread 0 Crashed:\n"
        + "\n".join(f"{i:<3}{f}" for i, f in enumerate(frames0))
    )
    libs = [
        "libsystem_kernel.dylib",
        "libsystem_pthread.dylib",
        "CFNetwork",
        "Foundation",
        "libdispatch.dylib",
        "Wayfare",
    ]
    for t in range(1, 14):
        frames = [
            f"{i:<3}{rng.choice(libs):<30}\t0x00000001{short_hash(rng, 8)} {rng.choice(['__workq_kernreturn', 'mach_msg2_trap', '_pthread_wqthread', '__psynch_cvwait', 'start_wqthread', '-[NSURLSession delegateQueue]', 'TimelineStore.refresh(tripID:)'])} + {rng.randint(4, 900)}"
            for i in range(rng.randint(3, 8))
        ]
        threads.append(f"Thread {t}:\n" + "\n".join(frames))
    state = "Thread 0 crashed with ARM Thread State (64-bit):\n" + "\n".join(
        "   " + "  ".join(f"x{r + j}: 0x{short_hash(rng, 16)}" for j in range(4))
        for r in range(0, 28, 4)
    )
    images = "Binary Images:\n" + "\n".join(
        f"       0x{short_hash(rng, 9)} -        0x{short_hash(rng, 9)} {name} arm64  <{short_hash(rng, 32)}> /usr/lib/{name}"
        for name in [
            "Wayfare",
            "WayfareKit",
            "libobjc.A.dylib",
            "UIKitCore",
            "CoreFoundation",
            "Foundation",
            "libdispatch.dylib",
            "GraphicsServices",
            "CFNetwork",
            "libsystem_kernel.dylib",
            "libsystem_pthread.dylib",
            "QuartzCore",
            "MapKit",
            "SwiftUI",
            "Combine",
            "libswiftCore.dylib",
            "Security",
            "CoreData",
            "AVFoundation",
            "StoreKit",
        ]
    )
    return head + "\n" + "\n\n".join(threads) + "\n\n" + state + "\n\n" + images + "\n\nEOF"


def _crashlytics(seed: int) -> str:
    rng = random.Random(seed)
    files = [
        "BookingCardView.swift",
        "MapPinView.swift",
        "SeatPicker.swift",
        "TripShareSheet.swift",
        "ImageCache.swift",
        "AuthSession.swift",
        "PushRouter.swift",
        "ItineraryHeader.swift",
        "OfflineSync.swift",
        "CurrencyFormatter.swift",
    ]
    lines = ["issue_id,version,build,os,top_frame,events,users,first_seen"]
    for _ in range(110):
        version, build = rng.choice(
            [
                ("6.14.0", "6140217"),
                ("6.13.2", "6132104"),
                ("6.13.1", "6131009"),
                ("6.12.4", "6124002"),
            ]
        )
        lines.append(
            f"{short_hash(rng, 10)},{version},{build},iOS {rng.choice(['16.7.8', '17.3.1', '17.4.1', '17.5', '18.1'])},{rng.choice(files)}:{rng.randint(12, 400)},{rng.randint(3, 9000)},{rng.randint(2, 6500)},2026-{rng.randint(9, 12):02d}-{rng.randint(1, 28):02d}"
        )
    return bury(
        lines,
        {
            0.55: "c41e09ab77,6.14.0,6140217,iOS 17.4.1,TimelineDiffableDataSource.swift:63,41382,17905,2026-12-03"
        },
    )


def _xcodebuild(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    suites = [
        "BookingFlowTests",
        "TimelineStoreTests",
        "ItineraryParserTests",
        "CurrencyFormatterTests",
        "SeatPickerTests",
        "OfflineSyncTests",
        "PushRouterTests",
    ]
    lines = [
        "Test Suite 'All tests' started at 2026-12-07 11:02:14.220.",
        "Test Suite 'WayfareTests.xctest' started at 2026-12-07 11:02:14.221.",
    ]
    for _ in range(190):
        s = rng.choice(suites)
        name = f"test{rng.choice(['Loads', 'Parses', 'Formats', 'Rejects', 'Merges', 'Scrolls', 'Caches', 'Routes'])}{rng.choice(['Empty', 'Nested', 'Offline', 'Expired', 'Cancelled', 'Large', 'Partial'])}{rng.choice(['Trip', 'Segment', 'Seat', 'Fare', 'Leg', 'Pin'])}"
        lines.append(
            f"Test Case '-[WayfareTests.{s} {name}]' passed ({rng.randint(1, 900) / 1000:.3f} seconds)."
        )
    lines += [
        "Test Suite 'WayfareTests.xctest' passed at 2026-12-07 11:03:49.101.",
        "\t Executed 1284 tests, with 1 failure (0 unexpected) in 92.414 (95.880) seconds",
    ]
    return bury(lines, planted)


def _swift(seed: int, count: int) -> str:
    rng = random.Random(seed)
    nouns = ["segment", "leg", "booking", "fare", "seat", "pin", "trip", "stop"]
    lines = []
    for i in range(count):
        a = rng.choice(nouns)
        lines += [
            f"    func make{a.capitalize()}Item{i}(_ {a}: {a.capitalize()}) -> TimelineItem {{",
            f"        let title = formatter.title(for: {a})",
            f"        return TimelineItem(id: {a}.id, title: title, kind: .{a}, order: {rng.randint(0, 40)})",
            "    }",
            "",
        ]
    return "\n".join(lines)


G2 = Session(
    "g2-ios-crash",
    [
        U(
            "Crash-free sessions on iOS dropped from 99.6% to 97.8% since 6.14.0 went to 100% of users. Hana Kobayashi is the release captain for 6.14.x and she wants a hotfix plan by tonight. Can you triage? The Crashlytics export and a few .ips files are in crashes/."
        ),
        A(
            "Starting with the Crashlytics export for the top issues by version, and the crash folder.",
            Call(
                "shell",
                codex_shell(
                    "column -s, -t < crashes/crashlytics_top_issues_2026-12-07.csv | head -n 130",
                    _IOS,
                ),
                codex_json(_crashlytics(1201)),
            ),
            Call(
                "shell",
                codex_shell("ls -la crashes/", _IOS),
                codex_text(
                    "total 18424\n"
                    + "\n".join(
                        f"-rw-r--r--  1 dev  staff  {random.Random(1202 + i).randint(40000, 190000):6d} Dec  {6 + i % 2} 1{i % 10}:{i * 7 % 60:02d} Wayfare-2026-12-0{6 + i % 2}-{i:03d}.ips"
                        for i in range(64)
                    )
                ),
            ),
        ),
        A(
            "One 6.14.0 issue dwarfs the rest. Symbolicating one of its reports.",
            Call(
                "shell",
                codex_shell(
                    "xcrun crashlog symbolicate crashes/Wayfare-2026-12-06-017.ips --dsym build/Wayfare.app.dSYM",
                    _IOS,
                ),
                codex_text(_crash_report(1203), seconds=6.2),
            ),
        ),
        A(
            "It crashes inside UIKit while applying a diffable snapshot, called from TimelineStore.reload(). Looking at the store and at what changed in it.",
            Call(
                "shell",
                codex_shell("sed -n '1,260p' Wayfare/Features/Timeline/TimelineStore.swift", _IOS),
                codex_json(
                    'import UIKit\nimport Combine\n\nfinal class TimelineStore {\n    private let api: TimelineAPI\n    private let dataSource: TimelineDiffableDataSource\n    private let workQueue = DispatchQueue(label: "com.wayfare.timeline", qos: .userInitiated)\n\n'
                    + _swift(1204, 20)
                    + "\n    func refresh(tripID: Trip.ID) {\n        workQueue.async { [weak self] in\n            self?.items = self?.api.cachedTimeline(tripID) ?? []\n            self?.reload()\n        }\n    }\n\n    func reload() {\n        var snapshot = NSDiffableDataSourceSnapshot<Section, TimelineItem>()\n        snapshot.appendSections([.main])\n        snapshot.appendItems(items)\n        dataSource.applySnapshot(snapshot, animated: true)\n    }\n"
                    + _swift(1205, 12)
                    + "}\n"
                ),
            ),
            Call(
                "shell",
                codex_shell(
                    "git log --format='%h %ad %an %s' --date=short -n 100 -- Wayfare/", _IOS
                ),
                codex_text(
                    _git_log(
                        1206,
                        100,
                        _I_AUTHORS,
                        _I_SUBJECTS,
                        {
                            0.37: "b7d04e1 2026-11-19 kenji.a          Load timeline off the main thread (#4412)"
                        },
                    )
                ),
            ),
        ),
        U(
            "Please don't change anything in WayfareKit/Networking for this; that module is frozen until after the hotfix ships. And ask Dmitri before running anything on real hardware, he runs the device lab."
        ),
        A(
            "Got it, Networking stays untouched. Reproducing in the simulator with Thread Sanitizer on.",
            Call(
                "shell",
                codex_shell(
                    "xcodebuild test -scheme Wayfare -destination 'platform=iOS Simulator,name=iPhone 15 Pro,OS=17.4' -enableThreadSanitizer YES -only-testing:WayfareTests 2>&1 | grep -E \"Test Case|Executed|error|WARNING\"",
                    _IOS,
                ),
                codex_text(
                    _xcodebuild(
                        1207,
                        {
                            0.62: "WARNING: ThreadSanitizer: data race (pid=48213)\n  Write of size 8 at 0x7b0c000a1f40 by thread T7:\n    #0 TimelineStore.items.setter TimelineStore.swift:122\n  Previous read of size 8 at 0x7b0c000a1f40 by main thread:\n    #0 TimelineStore.reload() TimelineStore.swift:139\nSUMMARY: ThreadSanitizer: data race TimelineStore.swift:122 in TimelineStore.items.setter",
                            0.63: '/Users/dev/src/wayfare-ios/WayfareTests/Timeline/TimelineStoreTests.swift:88: error: -[WayfareTests.TimelineStoreTests testReloadWhileScrolling] : XCTAssertEqual failed: ("12") is not equal to ("14")\nTest Case \'-[WayfareTests.TimelineStoreTests testReloadWhileScrolling]\' failed (0.611 seconds).',
                        },
                    ),
                    code=65,
                    seconds=141.7,
                ),
            ),
        ),
        A(
            "That settles it. The crash comes from applying the diffable snapshot on a background queue: since the change that moved timeline loading off the main thread, refresh() calls reload() from the work queue while the collection view may be mid-layout, and iOS 17.4 traps that instead of tolerating it. The data race TSan reports on `items` is the same bug seen from the other side."
        ),
        A(
            "Decision: mark TimelineStore @MainActor and hop back to the main actor before reload(), rather than guarding items with a lock, because UIKit needs the snapshot applied on the main thread anyway and a lock would only fix the race, not the crash.",
            Call(
                "apply_patch",
                codex_patch(
                    "Wayfare/Features/Timeline/TimelineStore.swift",
                    "final class TimelineStore {\n    func refresh(tripID: Trip.ID) {\n        workQueue.async { [weak self] in\n            self?.items = self?.api.cachedTimeline(tripID) ?? []\n            self?.reload()\n        }\n    }",
                    "@MainActor\nfinal class TimelineStore {\n    func refresh(tripID: Trip.ID) {\n        Task {\n            let loaded = await Task.detached(priority: .userInitiated) { [api] in api.cachedTimeline(tripID) }.value\n            self.items = loaded\n            self.reload()\n        }\n    }",
                    "final class TimelineStore",
                ),
                codex_text(codex_patched("Wayfare/Features/Timeline/TimelineStore.swift")),
            ),
            Call(
                "apply_patch",
                {
                    "input": "*** Begin Patch\n*** Add File: WayfareTests/Timeline/TimelineStoreConcurrencyTests.swift\n+import XCTest\n+@testable import Wayfare\n+\n+@MainActor\n+final class TimelineStoreConcurrencyTests: XCTestCase {\n+    func testRefreshAppliesSnapshotOnMainThread() async {\n+        let spy = DataSourceSpy()\n+        let store = TimelineStore(api: .stub(items: 40), dataSource: spy)\n+        for _ in 0..<50 { store.refresh(tripID: .sample) }\n+        await spy.waitForApplies(50)\n+        XCTAssertTrue(spy.allAppliesOnMain)\n+    }\n+}\n*** End Patch"
                },
                codex_text(
                    "Success. Updated the following files:\nA WayfareTests/Timeline/TimelineStoreConcurrencyTests.swift"
                ),
            ),
        ),
        A(
            chatter(1208),
            Call(
                "shell",
                codex_shell(
                    "xcodebuild test -scheme Wayfare -destination 'platform=iOS Simulator,name=iPhone 15 Pro,OS=17.4' -enableThreadSanitizer YES -only-testing:WayfareTests 2>&1 | grep -E \"Test Case|Executed|error|WARNING\"",
                    _IOS,
                ),
                codex_text(
                    _xcodebuild(
                        1209,
                        {
                            0.4: "Test Case '-[WayfareTests.TimelineStoreConcurrencyTests testRefreshAppliesSnapshotOnMainThread]' passed (0.284 seconds)."
                        },
                    ).replace("with 1 failure", "with 0 failures"),
                    seconds=138.2,
                ),
            ),
        ),
        U(
            "Nice. Ship it as 6.14.1 build 6141003. Correction: build numbers have to be above what's already on TestFlight, and the internal build there is 6141005, so use 6141006."
        ),
        A(
            "Bumping to 6.14.1 (6141006) in the project settings.",
            Call(
                "shell",
                codex_shell(
                    "agvtool new-marketing-version 6.14.1 && agvtool new-version -all 6141006 && git diff --stat",
                    _IOS,
                ),
                codex_json(
                    "Setting CFBundleShortVersionString of project Wayfare to: \n    6.14.1.\n\nUpdating CFBundleShortVersionString in Info.plist(s)...\n\nSetting version of project Wayfare to: \n    6141006.\n\nAlso setting CFBundleVersion key (assuming it exists)\n\nUpdating CFBundleVersion in Info.plist(s)...\n\n Wayfare.xcodeproj/project.pbxproj | 8 ++++----\n Wayfare/Info.plist                | 4 ++--\n WayfareNotificationService/Info.plist | 4 ++--\n WayfareWidgets/Info.plist         | 4 ++--\n 4 files changed, 10 insertions(+), 10 deletions(-)"
                ),
            ),
        ),
        A(
            "Hotfix is ready on the branch: the store runs on the main actor, the new concurrency test passes under TSan, and the version is 6.14.1 (6141006). Still to do: Dmitri runs it on the device lab's iOS 17.4 phones, then Hana submits it for review."
        ),
    ],
    [
        Fact("number", ("97.8%",), "crash-free rate now, said only by the user"),
        Fact("person", ("Hana", "release captain"), "release captain"),
        Fact("person", ("Dmitri", "device lab"), "device lab owner"),
        Fact("tool_output", ("0x0000000000000010",), "faulting address in the crash report"),
        Fact("tool_output", ("17905",), "users hit by the top issue, mid-CSV"),
        Fact(
            "tool_output", ("b7d04e1",), "the commit that moved loading off main, in a long git log"
        ),
        Fact("tool_output", ("testReloadWhileScrolling",), "failing test in a long test log"),
        Fact("conclusion", ("background queue", "snapshot"), "cause, concluded in a reply"),
        Fact("decision", ("@MainActor", "UIKit"), "main actor rather than a lock, and why"),
        Fact("constraint", ("Networking", "frozen"), "networking module frozen"),
        Fact("path", ("TimelineStore.swift",), "file patched"),
        Fact("path", ("TimelineStoreConcurrencyTests.swift",), "test added"),
        Fact("number", ("6141006",), "build number, the corrected value"),
    ],
)

# -- g3: GPU driver upgrade --------------------------------------------------------------------

_NODES = [f"gpu-a100-{i:02d}" for i in range(1, 17)]


def _smi_query(seed: int, driver: str) -> str:
    rng = random.Random(seed)
    lines = []
    for node in _NODES:
        for gpu in range(8):
            bus = ["07", "0F", "47", "4E", "87", "90", "B7", "BD"][gpu]
            lines.append(
                f"{node}: {gpu}, NVIDIA A100-SXM4-80GB, 00000000:{bus}:00.0, {driver}, {rng.randint(31, 74)}, {rng.randint(62, 398)}.{rng.randint(10, 99)} W, {rng.choice([0, 0, 0, 12, 4411, 65012, 81051])} MiB, {rng.choice([0, 0, 97, 100])} %, Enabled, 0"
            )
    return "\n".join(lines)


def _xid_scan(seed: int) -> str:
    rng = random.Random(seed)
    lines = []
    for node in _NODES:
        for _ in range(rng.randint(2, 6)):
            t = f"[{rng.randint(100000, 999999)}.{rng.randint(100000, 999999)}]"
            lines.append(
                rng.choice(
                    [
                        f"{node}: {t} NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.154.05  Thu Dec 28 22:19:52 UTC 2023",
                        f"{node}: {t} nvidia-nvswitch{rng.randint(0, 5)}: SXid (PCI:0000:{rng.choice(['82', '83', '84'])}:00.0): 12028, Non-fatal, Link {rng.randint(0, 35)} egress non-posted PRIV error (First)",
                        f"{node}: {t} NVRM: Xid (PCI:0000:{rng.choice(['07', '0f', '47', '4e'])}:00): 31, pid={rng.randint(1000, 99999)}, name=python, Ch 0000000{rng.randint(1, 9)}, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_{rng.randint(0, 9)} faulted @ 0x7f{short_hash(rng, 8)}_00000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
                        f"{node}: {t} NVRM: Xid (PCI:0000:{rng.choice(['87', '90', 'b7', 'bd'])}:00): 13, pid={rng.randint(1000, 99999)}, name=python, Graphics SM Warp Exception on (GPC {rng.randint(0, 7)}, TPC {rng.randint(0, 8)}, SM {rng.randint(0, 1)}): Out Of Range Address",
                        f"{node}: {t} nvidia-peermem: module verification failed: signature and/or required key missing - tainting kernel",
                    ]
                )
            )
    return bury(
        lines,
        {
            0.78: "gpu-a100-13: [884213.556021] NVRM: Xid (PCI:0000:bd:00): 79, pid=0, name=, GPU has fallen off the bus.\ngpu-a100-13: [884213.556104] NVRM: GPU 0000:bd:00.0: GPU has fallen off the bus."
        },
    )


def _nccl(seed: int, busbw: str) -> str:
    rng = random.Random(seed)
    lines = [
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    for rank in range(32):
        lines.append(
            f"#  Rank {rank:2d} Group  0 Pid {rng.randint(30000, 90000)} on {_NODES[rank // 8]} device  {rank % 8} [0x{['07', '0f', '47', '4e', '87', '90', 'b7', 'bd'][rank % 8]}] NVIDIA A100-SXM4-80GB"
        )
    lines += [
        "#",
        "#                                                              out-of-place                       in-place",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
    ]
    size = 8
    while size <= 8589934592:
        t = max(12.0, size / 1.4e5 * rng.uniform(0.9, 1.1))
        alg = size / t / 1000
        lines.append(
            f"{size:12d} {size // 4:13d}     float     sum      -1 {t:8.1f} {alg:7.2f} {alg * 1.94:7.2f}      0 {t * 1.01:8.1f} {alg * 0.99:7.2f} {alg * 1.92:7.2f}      0"
        )
        size *= 2
    lines += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {busbw} ", "#"]
    return "\n".join(lines)


def _group_vars() -> str:
    head = """---
# Cluster-wide settings for the A100 training nodes (group gpu_a100)
nvidia_driver_branch: "535"
nvidia_driver_version: "535.154.05"
nvidia_driver_package_state: present
nvidia_fabricmanager_version: "{{ nvidia_driver_version }}"
nvidia_persistenced_enabled: true
cuda_toolkit_version: "12.2.2"
cuda_compat_package: "cuda-compat-12-2"
nccl_version: "2.18.5-1+cuda12.2"
dcgm_version: "3.3.5"
kernel_version_pin: "5.15.0-119-generic"
lustre_client_version: "2.15.4"
mofed_version: "23.10-1.1.9.0"
ib_hca_ports:
"""
    body = "\n".join(f"  - mlx5_{i}:1" for i in range(8))
    sysctl = "\n".join(
        f"  net.core.{k}: {v}"
        for k, v in [
            ("rmem_max", 268435456),
            ("wmem_max", 268435456),
            ("netdev_max_backlog", 250000),
            ("somaxconn", 4096),
        ]
    )
    limits = "\n".join(
        f"  - {{ domain: '*', type: {t}, item: {item}, value: {v} }}"
        for t in ["soft", "hard"]
        for item, v in [
            ("memlock", "unlimited"),
            ("nofile", 1048576),
            ("stack", "unlimited"),
            ("nproc", 65536),
        ]
    )
    mounts = "\n".join(
        f"  - {{ src: 'lustre-mgs@o2ib:/{fs}', path: '/mnt/{fs}', opts: 'flock,noatime' }}"
        for fs in ["scratch", "datasets", "checkpoints", "home2"]
    )
    slurm = (
        "\n".join(f'slurm_gres_{i}: "gpu:a100:8"' for i in range(1, 3))
        + "\nslurm_partition: train\nslurm_features: [a100, nvlink, ib400]\nslurm_node_weight: 10\n"
    )
    return (
        head
        + body
        + "\nsysctl_settings:\n"
        + sysctl
        + "\nsecurity_limits:\n"
        + limits
        + "\nlustre_mounts:\n"
        + mounts
        + "\n"
        + slurm
        + "\n".join(f"dcgm_exporter_metric_{i}: true" for i in range(40))
    )


def _squeue(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "             JOBID PARTITION                     NAME     USER ST       TIME  NODES NODELIST(REASON)"
    ]
    jobs = [
        ("rlhf-sweep-17", "gpu-a100-[05-06]"),
        ("llm-eval-nightly", "gpu-a100-09"),
        ("ckpt-convert", "gpu-a100-15"),
    ]
    for name, nodes in jobs:
        lines.append(
            f"{rng.randint(881000, 889999):>18} train     {name:>24} {rng.choice(['m.chen', 'a.iyer', 'svc-eval', 'r.bauer']):>8}  R {rng.randint(1, 60)}:{rng.randint(10, 59)}:{rng.randint(10, 59)} {nodes.count('-') + 1:>6} {nodes}"
        )
    for _ in range(60):
        lines.append(
            f"{rng.randint(881000, 889999):>18} train     {rng.choice(['pretrain-7b-ablation', 'tokenizer-bench', 'sft-mix-v4', 'dpo-sweep', 'vision-probe', 'rm-train'])}-{rng.randint(1, 40):>2} {rng.choice(['m.chen', 'a.iyer', 'svc-eval', 'r.bauer', 'k.sato']):>8} PD       0:00 {rng.choice([1, 2, 4, 8]):>6} (Resources)"
        )
    return "\n".join(lines)


def _ansible_run(seed: int, nodes: list[str]) -> str:
    rng = random.Random(seed)
    tasks = [
        "Gathering Facts",
        "drain node in slurm",
        "stop nvidia-persistenced",
        "stop nvidia-fabricmanager",
        "stop dcgm",
        "unload nvidia modules",
        "install nvidia driver packages",
        "install fabricmanager",
        "hold driver packages",
        "reboot",
        "wait for nvidia-smi",
        "start nvidia-fabricmanager",
        "start dcgm",
        "run dcgmi diag -r 1",
        "resume node in slurm",
    ]
    lines = [f"PLAY [rolling driver upgrade] {'*' * 60}", ""]
    for task in tasks:
        lines.append(f"TASK [{task}] {'*' * (70 - len(task))}")
        for node in nodes:
            lines.append(f"{rng.choice(['ok', 'changed'])}: [{node}]")
        lines.append("")
    lines.append(f"PLAY RECAP {'*' * 70}")
    for node in nodes:
        lines.append(
            f"{node:<26}: ok={rng.randint(14, 18)}   changed={rng.randint(8, 12)}   unreachable=0    failed=0    skipped=2    rescued=0    ignored=0"
        )
    return "\n".join(lines)


G3 = Session(
    "g3-gpu-driver",
    [
        U(
            "We need the A100 nodes off the 535 driver. The new PyTorch images want CUDA 12.4, so upgrade to 550.54.14. Sorry, 550.54.15: .14 ships with the fabric manager mismatch bug. Oksana is the HPC admin and holds the Slurm reservation for the maintenance, so she has to be told when nodes drain."
        ),
        A(
            "Checking the current state of all sixteen nodes and the kernel logs before planning anything.",
            Call(
                "Bash",
                {
                    "command": "pdsh -w gpu-a100-[01-16] 'nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,temperature.gpu,power.draw,memory.used,utilization.gpu,persistence_mode,retired_pages.pending --format=csv,noheader' | sort",
                    "description": "GPU state on every node",
                },
                _smi_query(1301, "535.154.05"),
            ),
            Call(
                "Bash",
                {
                    "command": "pdsh -w gpu-a100-[01-16] 'dmesg -T --level=err,warn | grep -E \"NVRM|nvswitch|peermem\" | tail -n 8' | sort -k1,1",
                    "description": "Driver messages in the kernel log",
                },
                _xid_scan(1302),
            ),
        ),
        A(
            "Baseline all-reduce bandwidth across four nodes before touching anything.",
            Call(
                "Bash",
                {
                    "command": "srun -N4 -w gpu-a100-[01-04] --gpus-per-node=8 --ntasks-per-node=8 /opt/nccl-tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 1",
                    "description": "NCCL all_reduce baseline",
                },
                _nccl(1303, "187.42"),
            ),
            Call(
                "Read",
                {"file_path": "/opt/infra/ansible/group_vars/gpu_a100.yml"},
                numbered(_group_vars()),
            ),
        ),
        A(
            "Reading the driver role and the node states before planning batches.",
            Call(
                "Read",
                {"file_path": "/opt/infra/ansible/roles/nvidia_driver/tasks/main.yml"},
                numbered(
                    "---\n"
                    + "\n".join(
                        f"- name: {t}\n  ansible.builtin.{m}:\n    name: {n}\n    state: {st}\n  tags: [nvidia, {tag}]\n"
                        for t, m, n, st, tag in [
                            (
                                "stop nvidia-persistenced",
                                "systemd",
                                "nvidia-persistenced",
                                "stopped",
                                "stop",
                            ),
                            ("stop dcgm", "systemd", "nvidia-dcgm", "stopped", "stop"),
                            (
                                "stop nvidia-fabricmanager",
                                "systemd",
                                "nvidia-fabricmanager",
                                "stopped",
                                "stop",
                            ),
                            (
                                "unload nvidia modules",
                                "command",
                                "modprobe -r nvidia_uvm nvidia_drm nvidia_modeset nvidia_peermem nvidia",
                                "absent",
                                "modules",
                            ),
                            (
                                "install nvidia driver packages",
                                "apt",
                                "nvidia-driver-{{ nvidia_driver_branch }}-server={{ nvidia_driver_version }}-0ubuntu1",
                                "present",
                                "install",
                            ),
                            (
                                "install fabricmanager",
                                "apt",
                                "nvidia-fabricmanager-{{ nvidia_driver_branch }}={{ nvidia_fabricmanager_version }}-1",
                                "present",
                                "install",
                            ),
                            (
                                "install cuda compat",
                                "apt",
                                "{{ cuda_compat_package }}",
                                "present",
                                "install",
                            ),
                            (
                                "install nccl",
                                "apt",
                                "libnccl2={{ nccl_version }}",
                                "present",
                                "install",
                            ),
                            (
                                "hold driver packages",
                                "dpkg_selections",
                                "nvidia-driver-{{ nvidia_driver_branch }}-server",
                                "hold",
                                "install",
                            ),
                            ("reboot", "reboot", "reboot_timeout=900", "rebooted", "reboot"),
                            (
                                "start nvidia-fabricmanager",
                                "systemd",
                                "nvidia-fabricmanager",
                                "started",
                                "start",
                            ),
                            (
                                "start nvidia-persistenced",
                                "systemd",
                                "nvidia-persistenced",
                                "started",
                                "start",
                            ),
                            ("start dcgm", "systemd", "nvidia-dcgm", "started", "start"),
                        ]
                    )
                ),
            ),
            Call(
                "Bash",
                {
                    "command": "sinfo -N -p train -o '%N %T %C %m %G %E %H' && pdsh -w gpu-a100-[01-16] 'uname -r; cat /proc/driver/nvidia/version | head -1' | sort",
                    "description": "Node states and kernels",
                },
                "NODELIST STATE CPUS(A/I/O/T) MEMORY GRES REASON TIMESTAMP\n"
                + "\n".join(
                    f"{n} {'mixed' if n in ('gpu-a100-05', 'gpu-a100-06', 'gpu-a100-09', 'gpu-a100-15') else 'idle'} {64 if n in ('gpu-a100-05', 'gpu-a100-06') else 0}/128/0/128 2048000 gpu:a100:8 none Unknown"
                    for n in _NODES
                )
                + "\n"
                + "\n".join(
                    f"{n}: 5.15.0-119-generic\n{n}: NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.154.05  Thu Dec 28 22:19:52 UTC 2023"
                    for n in _NODES
                ),
            ),
        ),
        U(
            "The kernel stays on 5.15 whatever the driver wants, the Lustre client module isn't built for 6.x and we'd lose /mnt/datasets. Also leave the nodes running rlhf-sweep-17 alone until it finishes."
        ),
        A(
            "Understood. Checking which nodes are busy and how the reservation looks.",
            Call(
                "Bash",
                {
                    "command": "squeue -p train -o '%.18i %.9P %.24j %.8u %.2t %.10M %.6D %R' | head -n 80 && scontrol show reservation",
                    "description": "Queue and reservations",
                },
                _squeue(1304)
                + "\n\nReservationName=gpu-maint-2026-12-12 StartTime=2026-12-12T02:00:00 EndTime=2026-12-12T08:00:00 Duration=06:00:00\n   Nodes=gpu-a100-[01-04,07-16] NodeCnt=14 CoreCnt=1792 Features=(null) PartitionName=train Flags=MAINT,IGNORE_JOBS\n   TRES=cpu=1792\n   Users=oksana.l,root Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a",
            ),
            Call(
                "Grep",
                {
                    "pattern": "fabricmanager|persistenced",
                    "path": "/opt/infra/ansible",
                    "output_mode": "content",
                    "-n": True,
                },
                "\n".join(
                    f"roles/nvidia_driver/tasks/{f}:{n}:    name: {s}"
                    for f, n, s in [
                        ("main.yml", 12, "nvidia-persistenced"),
                        (
                            "main.yml",
                            31,
                            "nvidia-fabricmanager-{{ nvidia_driver_branch }}={{ nvidia_fabricmanager_version }}-1",
                        ),
                        ("main.yml", 44, "nvidia-fabricmanager"),
                        ("stop.yml", 5, "nvidia-persistenced"),
                        ("stop.yml", 9, "nvidia-fabricmanager"),
                        ("start.yml", 4, "nvidia-fabricmanager"),
                        ("start.yml", 11, "nvidia-persistenced"),
                    ]
                )
                + '\ngroup_vars/gpu_a100.yml:6:nvidia_fabricmanager_version: "{{ nvidia_driver_version }}"\nhost_vars/gpu-a100-10.yml:3:nvidia_fabricmanager_version: "535.129.03"\nhost_vars/gpu-a100-11.yml:3:nvidia_fabricmanager_version: "535.129.03"\nhost_vars/gpu-a100-12.yml:3:nvidia_fabricmanager_version: "535.129.03"',
            ),
        ),
        A(
            "Three nodes pin an older fabric manager in their host_vars. Checking the service on them.",
            Call(
                "Bash",
                {
                    "command": "pdsh -w gpu-a100-[10-12] 'systemctl status nvidia-fabricmanager --no-pager -l | head -n 30; journalctl -u nvidia-fabricmanager -n 25 --no-pager'",
                    "description": "Fabric manager status on 10-12",
                },
                "\n".join(
                    f"{node}: ● nvidia-fabricmanager.service - NVIDIA fabric manager service\n{node}:      Loaded: loaded (/lib/systemd/system/nvidia-fabricmanager.service; enabled; vendor preset: enabled)\n{node}:      Active: failed (Result: exit-code) since Sun 2026-12-06 03:12:{10 + i:02d} UTC; 1 day 7h ago\n{node}:     Process: 2214 ExecStart=/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg (code=exited, status=1/FAILURE)\n"
                    + "\n".join(
                        f"{node}: Dec 06 03:12:{j:02d} {node} nv-fabricmanager[2214]: {m}"
                        for j, m in enumerate(
                            [
                                "Connected to 1 node.",
                                "Fabric Manager version is : 535.129.03",
                                "Driver version is : 535.154.05",
                                "fabric manager NVIDIA GPU driver interface version 535.129.03 don't match with driver version 535.154.05. Please update with matching NVIDIA driver package.",
                                "Terminating Fabric Manager daemon...",
                                "nvidia-fabricmanager.service: Main process exited, code=exited, status=1/FAILURE",
                                "nvidia-fabricmanager.service: Failed with result 'exit-code'.",
                            ]
                        )
                    )
                    for i, node in enumerate(["gpu-a100-10", "gpu-a100-11", "gpu-a100-12"])
                ),
            ),
        ),
        A(
            "So part of the slowness people blamed on the 535 driver isn't the driver at all: on gpu-a100-10 to 12 the fabric manager is pinned to 535.129.03, it refuses to start against a 535.154.05 driver, and without it those nodes run NCCL over PCIe instead of NVSwitch. The upgrade has to move the fabric manager in lockstep and drop those host_vars pins."
        ),
        U("How long is the window, by the way? I think it's six hours on Saturday."),
        A(
            "Yes: the maintenance reservation runs 6 hours, Saturday 02:00 to 08:00 UTC, and it covers 14 nodes (05 and 06 are left out for rlhf-sweep-17)."
        ),
        A(
            "Decision: drain and upgrade in batches of 4 nodes rather than all at once, because the checkpoint-conversion queue needs 12 nodes outside maintenance at any moment to keep its reservation. Four batches fit the 6 hours with a diag run per batch. Updating the group vars and removing the host_vars pins.",
            Call(
                "Edit",
                {
                    "file_path": "/opt/infra/ansible/group_vars/gpu_a100.yml",
                    "old_string": 'nvidia_driver_branch: "535"\nnvidia_driver_version: "535.154.05"',
                    "new_string": 'nvidia_driver_branch: "550"\nnvidia_driver_version: "550.54.15"',
                },
                edited(
                    "/opt/infra/ansible/group_vars/gpu_a100.yml",
                    '---\n# Cluster-wide settings for the A100 training nodes (group gpu_a100)\nnvidia_driver_branch: "550"\nnvidia_driver_version: "550.54.15"\nnvidia_driver_package_state: present',
                    1,
                ),
            ),
            Call(
                "Edit",
                {
                    "file_path": "/opt/infra/ansible/group_vars/gpu_a100.yml",
                    "old_string": 'cuda_toolkit_version: "12.2.2"\ncuda_compat_package: "cuda-compat-12-2"\nnccl_version: "2.18.5-1+cuda12.2"',
                    "new_string": 'cuda_toolkit_version: "12.4.1"\ncuda_compat_package: "cuda-compat-12-4"\nnccl_version: "2.21.5-1+cuda12.4"',
                },
                edited(
                    "/opt/infra/ansible/group_vars/gpu_a100.yml",
                    'cuda_toolkit_version: "12.4.1"\ncuda_compat_package: "cuda-compat-12-4"\nnccl_version: "2.21.5-1+cuda12.4"',
                    8,
                ),
            ),
            Call(
                "Bash",
                {
                    "command": "cd /opt/infra/ansible && git rm -q host_vars/gpu-a100-1[0-2].yml && git status --short",
                    "description": "Drop fabric manager pins",
                },
                "D  host_vars/gpu-a100-10.yml\nD  host_vars/gpu-a100-11.yml\nD  host_vars/gpu-a100-12.yml\n M group_vars/gpu_a100.yml",
            ),
        ),
        A(
            "Writing the rolling playbook: serial batches of four, drain in Slurm, upgrade driver and fabric manager together, diag, resume.",
            Call(
                "Write",
                {
                    "file_path": "/opt/infra/ansible/playbooks/nvidia_driver_rolling.yml",
                    "content": "---\n- name: rolling driver upgrade\n  hosts: gpu_a100:!gpu-a100-05:!gpu-a100-06\n  serial: 4\n  max_fail_percentage: 0\n  roles:\n    - role: slurm_drain\n      vars: { reason: 'nvidia 550 upgrade' }\n    - role: nvidia_driver\n    - role: dcgm_diag\n      vars: { level: 1 }\n    - role: slurm_resume\n",
                },
                "File created successfully at: /opt/infra/ansible/playbooks/nvidia_driver_rolling.yml",
            ),
            Call(
                "Bash",
                {
                    "command": "cd /opt/infra/ansible && ansible-playbook playbooks/nvidia_driver_rolling.yml --limit gpu-a100-[01-04] --check --diff 2>&1 | tail -n 120",
                    "description": "Dry run on the first batch",
                },
                _ansible_run(1305, _NODES[:4]),
            ),
        ),
        A(
            "Dry run is clean. Oksana opened a test slot in the reservation for the first batch, so running batch one for real and measuring again.",
            Call(
                "Bash",
                {
                    "command": "cd /opt/infra/ansible && ansible-playbook playbooks/nvidia_driver_rolling.yml --limit gpu-a100-[01-04] 2>&1 | tail -n 120 && pdsh -w gpu-a100-[01-04] 'nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,temperature.gpu,power.draw,memory.used,utilization.gpu,persistence_mode,retired_pages.pending --format=csv,noheader'",
                    "description": "Upgrade batch one",
                },
                _ansible_run(1306, _NODES[:4])
                + "\n"
                + "\n".join(line for line in _smi_query(1307, "550.54.15").splitlines()[:32]),
            ),
            Call(
                "Bash",
                {
                    "command": "srun -N4 -w gpu-a100-[01-04] --gpus-per-node=8 --ntasks-per-node=8 /opt/nccl-tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 1",
                    "description": "NCCL after the upgrade",
                },
                _nccl(1308, "221.06"),
            ),
        ),
        A(
            "Batch one is on 550.54.15 and all-reduce bus bandwidth went up to 221.06 GB/s on the same four nodes. Left for Saturday: batches two to four (07-10, 11-14, 15-16 plus 05-06 once rlhf-sweep-17 is done), with Oksana draining each batch; gpu-a100-13 needs its GPU reseated before it rejoins."
        ),
    ],
    [
        Fact("person", ("Oksana", "Slurm"), "HPC admin holding the reservation"),
        Fact("number", ("550.54.15",), "target driver, the corrected value"),
        Fact("tool_output", ("fallen off the bus",), "Xid 79 buried in the kernel log scan"),
        Fact("tool_output", ("187.42",), "baseline bus bandwidth at the end of a long table"),
        Fact("tool_output", ("535.129.03",), "fabric manager version pinned on three nodes"),
        Fact("constraint", ("Lustre",), "kernel stays on 5.15 because of Lustre"),
        Fact("constraint", ("rlhf-sweep-17",), "leave the sweep's nodes alone"),
        Fact("conclusion", ("fabric manager", "PCIe"), "why three nodes were slow"),
        Fact("number", ("6 hours",), "maintenance window, stated in conversation"),
        Fact("decision", ("batches of 4", "12 nodes"), "batch size and why"),
        Fact("path", ("group_vars/gpu_a100.yml",), "vars edited"),
        Fact("path", ("nvidia_driver_rolling.yml",), "playbook written"),
        Fact("number", ("221.06",), "bandwidth after, restated in a reply"),
    ],
)

# -- g4: payout reconciliation (Codex shapes) --------------------------------------------------

_RECON = "/home/dev/payouts"
_P_AUTHORS = ["lindiwe.m", "oskar.b", "fatima.z", "ci-bot", "chen.w", "noor.h"]
_P_SUBJECTS = [
    "Add SEK to payout currency allowlist",
    "Retry SFTP download on timeout (#{n})",
    "Split recon job per PSP account",
    "Log settlement batch ids",
    "Fix tz of payout_date in export",
    "Merge pull request #{n} from payouts/recon-speedup",
    "Parse fee lines in settlement v2",
    "Bump pandas to 2.2.{n}",
    "Add metrics for unmatched payouts",
    "Skip reversed payouts in matcher",
    "Document adjustment entry workflow",
]


def _recon_rows(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    rows = [
        "payout_id                 merchant  ccy  psp_amount      ledger_amount   delta_minor     status"
    ]
    for _ in range(count):
        ccy = rng.choice(["JPY", "JPY", "KRW", "JPY", "KRW"])
        major = rng.randint(1200, 980000)
        rows.append(
            f"po_{short_hash(rng, 20)}  m_{rng.randint(1000, 9999)}    {ccy}  {major:<14}  {major * 100:<14}  {major - major * 100:<14}  MISMATCH"
        )
    return rows


def _settlement_csv(seed: int, count: int) -> str:
    rng = random.Random(seed)
    lines = ["batch_id,payout_id,merchant_account,currency,gross,fee,net,value_date,status"]
    for _ in range(count):
        ccy = rng.choice(["EUR", "EUR", "GBP", "USD", "JPY", "SEK", "KRW", "PLN", "HUF"])
        gross = (
            rng.randint(100, 900000) if ccy in ("JPY", "KRW") else round(rng.uniform(5, 9000), 2)
        )
        fee = round(gross * 0.012, 0 if ccy in ("JPY", "KRW") else 2)
        lines.append(
            f"B2026113{rng.randint(0, 9)}{rng.randint(100, 999)},po_{short_hash(rng, 20)},m_{rng.randint(1000, 9999)},{ccy},{gross},{fee},{round(gross - fee, 2)},2026-11-30,SETTLED"
        )
    return "\n".join(lines)


def _py_module(seed: int, count: int) -> str:
    rng = random.Random(seed)
    nouns = ["payout", "fee", "batch", "merchant", "row", "report", "ledger_entry", "account"]
    lines = []
    for i in range(count):
        a, b = rng.choice(nouns), rng.choice(nouns)
        lines += [
            f"def _{a}_{b}_{i}({a}: dict[str, str]) -> {b.title().replace('_', '')}:",
            f'    """Map one {a} to a {b}."""',
            f"    value = {a}.get('{b}_id') or ''",
            f"    return {b.title().replace('_', '')}(id=value, source='{rng.choice(['sftp', 'api', 'manual'])}')",
            "",
        ]
    return "\n".join(lines)


def _pytest(seed: int, count: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    mods = [
        "tests/test_matcher.py",
        "tests/test_parsers.py",
        "tests/test_export.py",
        "tests/test_sftp.py",
        "tests/test_adjustments.py",
    ]
    lines = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.12.7, pytest-8.3.3, pluggy-1.5.0",
        "rootdir: /home/dev/payouts",
        f"collected {count} items",
        "",
    ]
    for i in range(count):
        lines.append(
            f"{rng.choice(mods)}::test_{rng.choice(['parse', 'match', 'export', 'fee', 'net', 'currency', 'batch'])}_{rng.choice(['eur', 'gbp', 'usd', 'sek', 'pln', 'reversal', 'partial', 'empty'])}_{i} PASSED [{100 * (i + 1) // count:3d}%]"
        )
    return bury(lines, planted)


G4 = Session(
    "g4-payout-recon",
    [
        U(
            "The nightly payout reconciliation has flagged mismatches every night since Thursday. Settlement files land at 04:30 UTC from the PSP, recon runs right after. Lindiwe in finance ops signs off on any ledger adjustment, so nothing gets corrected without her. Work only from the saved settlement files in fixtures/ and data/, no calls to the PSP sandbox."
        ),
        A(
            "Running the recon locally against last night's file to see the mismatches.",
            Call(
                "shell",
                codex_shell(
                    "python -m recon.run --file data/settlement_2026-11-30.csv --dry-run --report -",
                    _RECON,
                ),
                codex_json(
                    "2026-12-07 08:02:11 INFO recon.run loaded 48902 payouts from data/settlement_2026-11-30.csv\n2026-12-07 08:02:14 INFO recon.matcher matched 47585 payouts exactly\n"
                    + "\n".join(_recon_rows(1401, 150))
                    + "\n2026-12-07 08:02:15 INFO recon.run summary mismatched_payouts=1317 matched=47585 total_payouts=48902 tolerance_minor=5\n2026-12-07 08:02:15 INFO recon.run dry run: no adjustment entries written",
                    seconds=4.1,
                ),
            ),
            Call(
                "shell",
                codex_shell("head -n 200 data/settlement_2026-11-30.csv", _RECON),
                codex_text(_settlement_csv(1402, 199)),
            ),
        ),
        A(
            "Every mismatched row I can see is JPY or KRW with the ledger amount exactly 100 times the PSP's. Reading the parser and its history.",
            Call(
                "shell",
                codex_shell("nl -ba recon/parsers/settlement_v2.py | sed -n '1,240p'", _RECON),
                codex_json(
                    "from decimal import Decimal\n\nfrom recon.models import Payout\n\n"
                    + _py_module(1403, 16)
                    + "\ndef to_minor(amount: str, currency: str) -> int:\n    # amounts arrive as major units with a decimal point\n    return int(Decimal(amount) * 100)\n\n\ndef parse_row(row: dict[str, str]) -> Payout:\n    return Payout(\n        payout_id=row['payout_id'],\n        currency=row['currency'],\n        net_minor=to_minor(row['net'], row['currency']),\n        fee_minor=to_minor(row['fee'], row['currency']),\n    )\n"
                    + _py_module(1404, 10)
                ),
            ),
            Call(
                "shell",
                codex_shell("git log --format='%h %ad %an %s' --date=short -n 90", _RECON),
                codex_text(
                    _git_log(
                        1405,
                        90,
                        _P_AUTHORS,
                        _P_SUBJECTS,
                        {
                            0.29: "e41d07b 2026-11-26 oskar.b          Normalize amounts to minor units at parse time"
                        },
                    )
                ),
            ),
            Call(
                "shell",
                codex_shell(
                    "psql payouts -c \"select currency, count(distinct merchant_id) as merchants, count(*) as payouts from recon_mismatch where run_date >= '2026-11-27' group by currency order by 1\"",
                    _RECON,
                ),
                codex_json(
                    " currency | merchants | payouts \n----------+-----------+---------\n JPY      |        61 |     934\n KRW      |        25 |     383\n(2 rows)"
                ),
            ),
        ),
        A(
            "That explains it. The PSP reports zero-decimal currencies such as JPY and KRW in whole units with no minor part, and since the change that normalizes amounts at parse time we multiply every currency by 100, so those payouts are inflated a hundredfold on our side. All other currencies match. It affects 86 merchants (61 JPY, 25 KRW) across 1317 payouts."
        ),
        A(
            "Checking how the matcher compares amounts, in case it hides the same assumption.",
            Call(
                "shell",
                codex_shell("nl -ba recon/matcher.py | sed -n '1,200p'", _RECON),
                codex_text(
                    "from recon.models import LedgerEntry, Payout\n\nTOLERANCE_MINOR = 5\n\n"
                    + _py_module(1408, 30)
                    + "\ndef matches(payout: Payout, entry: LedgerEntry) -> bool:\n    return abs(payout.net_minor - entry.amount_minor) <= TOLERANCE_MINOR\n"
                ),
            ),
            Call(
                "shell",
                codex_shell(
                    "psql payouts -c \"select payout_id, currency, amount_minor, booked_at from ledger_entries where booked_at >= '2026-11-27' and currency in ('JPY','KRW') order by booked_at limit 120\"",
                    _RECON,
                ),
                codex_json(
                    "       payout_id        | currency | amount_minor |        booked_at\n------------------------+----------+--------------+------------------------\n"
                    + "\n".join(
                        f" po_{short_hash(random.Random(1409 + i), 20)} | {'JPY' if i % 3 else 'KRW'}      | {random.Random(1409 + i).randint(120000, 98000000):>12} | 2026-11-{27 + i % 4} 0{4 + i % 3}:3{i % 10}:{i % 60:02d}+00"
                        for i in range(120)
                    )
                    + "\n(120 rows)"
                ),
            ),
        ),
        A(
            "The matcher only compares minor amounts with a tolerance of 5, so it is downstream of the bug and needs no change; the ledger amounts for those payouts are the inflated ones."
        ),
        U(
            "Makes sense. Do not write to the ledger tables directly to fix the past nights; corrections only go in as adjustment entries that Lindiwe approves."
        ),
        A(
            "Agreed. Decision: derive the exponent from the ISO 4217 table in our currencies module instead of hard-coding JPY and KRW, because the PSP already special-cases HUF (it reports it with two decimals although ISO says two and our old list said zero), and a hand-kept list goes stale again.",
            Call(
                "shell",
                codex_shell("sed -n '1,200p' recon/currencies.py", _RECON),
                codex_text(
                    "# ISO 4217 minor unit exponents, plus the PSP's own reporting quirks.\nEXPONENTS: dict[str, int] = {\n"
                    + "\n".join(
                        f"    '{c}': {e},"
                        for c, e in [
                            ("AED", 2),
                            ("AUD", 2),
                            ("BGN", 2),
                            ("BHD", 3),
                            ("BRL", 2),
                            ("CAD", 2),
                            ("CHF", 2),
                            ("CLP", 0),
                            ("CNY", 2),
                            ("CZK", 2),
                            ("DKK", 2),
                            ("EUR", 2),
                            ("GBP", 2),
                            ("HKD", 2),
                            ("HUF", 2),
                            ("IDR", 2),
                            ("ILS", 2),
                            ("INR", 2),
                            ("ISK", 0),
                            ("JOD", 3),
                            ("JPY", 0),
                            ("KRW", 0),
                            ("KWD", 3),
                            ("MXN", 2),
                            ("MYR", 2),
                            ("NOK", 2),
                            ("NZD", 2),
                            ("OMR", 3),
                            ("PHP", 2),
                            ("PLN", 2),
                            ("RON", 2),
                            ("SAR", 2),
                            ("SEK", 2),
                            ("SGD", 2),
                            ("THB", 2),
                            ("TND", 3),
                            ("TRY", 2),
                            ("TWD", 2),
                            ("UGX", 0),
                            ("USD", 2),
                            ("VND", 0),
                            ("XAF", 0),
                            ("XOF", 0),
                            ("ZAR", 2),
                        ]
                    )
                    + "\n}\n\nPSP_REPORTING_OVERRIDES: dict[str, int] = {'HUF': 2, 'TWD': 2, 'ISK': 2}\n\n\ndef exponent(currency: str) -> int:\n    return PSP_REPORTING_OVERRIDES.get(currency, EXPONENTS[currency])\n"
                ),
            ),
            Call(
                "apply_patch",
                codex_patch(
                    "recon/parsers/settlement_v2.py",
                    "def to_minor(amount: str, currency: str) -> int:\n    # amounts arrive as major units with a decimal point\n    return int(Decimal(amount) * 100)",
                    "def to_minor(amount: str, currency: str) -> int:\n    # amounts arrive in major units; the exponent is per currency (ISO 4217 + PSP quirks)\n    return int(Decimal(amount).scaleb(exponent(currency)))",
                    "def to_minor",
                ),
                codex_text(codex_patched("recon/parsers/settlement_v2.py")),
            ),
        ),
        A(
            "Adding a JPY fixture cut from the real file and running the suite.",
            Call(
                "apply_patch",
                {
                    "input": "*** Begin Patch\n*** Add File: tests/fixtures/settlement_2026-11-30_jpy.csv\n+batch_id,payout_id,merchant_account,currency,gross,fee,net,value_date,status\n+B20261130417,po_7c1a22e90b4d51f0a3c2,m_4471,JPY,12650,150,12500,2026-11-30,SETTLED\n+B20261130417,po_0e9d41b7a6c3f2d85e10,m_8810,KRW,1250000,15000,1235000,2026-11-30,SETTLED\n+B20261130417,po_55b2c0d9e1a4f7b3c6d8,m_2093,EUR,1250.00,15.00,1235.00,2026-11-30,SETTLED\n*** Add File: tests/test_zero_decimal.py\n+from recon.parsers.settlement_v2 import parse_file\n+\n+\n+def test_zero_decimal_currencies_are_not_scaled(fixtures):\n+    jpy, krw, eur = parse_file(fixtures / 'settlement_2026-11-30_jpy.csv')\n+    assert jpy.net_minor == 12500\n+    assert krw.net_minor == 1235000\n+    assert eur.net_minor == 123500\n*** End Patch"
                },
                codex_text(
                    "Success. Updated the following files:\nA tests/fixtures/settlement_2026-11-30_jpy.csv\nA tests/test_zero_decimal.py"
                ),
            ),
            Call(
                "shell",
                codex_shell("python -m pytest -q -p no:cacheprovider", _RECON),
                codex_json(
                    _pytest(
                        1406,
                        180,
                        {
                            0.44: "tests/test_parsers.py::test_to_minor_jpy_legacy FAILED [ 44%]",
                        },
                    )
                    + "\n\n=================================== FAILURES ===================================\n________________________ test_to_minor_jpy_legacy ________________________\n\n    def test_to_minor_jpy_legacy():\n>       assert to_minor('12500', 'JPY') == 1250000\nE       AssertionError: assert 12500 == 1250000\nE        +  where 12500 = to_minor('12500', 'JPY')\n\ntests/test_parsers.py:41: AssertionError\n=========================== short test summary info ============================\nFAILED tests/test_parsers.py::test_to_minor_jpy_legacy - AssertionError: assert 12500 == 1250000\n1 failed, 180 passed in 6.83s",
                    code=1,
                    seconds=7.9,
                ),
            ),
        ),
        A(
            "The one failure is a test that enshrined the old behaviour (it expects JPY scaled by 100). Fixing its expectation to the real minor amount.",
            Call(
                "apply_patch",
                codex_patch(
                    "tests/test_parsers.py",
                    "    assert to_minor('12500', 'JPY') == 1250000",
                    "    assert to_minor('12500', 'JPY') == 12500",
                    "def test_to_minor_jpy_legacy",
                ),
                codex_text(codex_patched("tests/test_parsers.py")),
            ),
            Call(
                "shell",
                codex_shell(
                    "python -m pytest -q -p no:cacheprovider && python -m recon.run --file data/settlement_2026-11-30.csv --dry-run --report - | tail -n 3",
                    _RECON,
                ),
                codex_text(
                    _pytest(1407, 182, {})
                    + "\n182 passed in 6.71s\n2026-12-07 08:41:52 INFO recon.run summary mismatched_payouts=0 matched=48902 total_payouts=48902 tolerance_minor=5\n2026-12-07 08:41:52 INFO recon.run dry run: no adjustment entries written",
                    seconds=11.3,
                ),
            ),
        ),
        U(
            "Good. The adjustment batch for the past nights has to be in by December 9. Sorry, correction from Lindiwe: December 11, the 9th is inside the month-end freeze."
        ),
        A(
            "Drafting the adjustment entries in dry-run form so Lindiwe can review them.",
            Call(
                "shell",
                codex_shell(
                    "python -m recon.adjust --since 2026-11-27 --currencies JPY,KRW --dry-run | head -n 92",
                    _RECON,
                ),
                codex_text(
                    "adjustment_id        payout_id                 ccy  ledger_minor    corrected_minor  entry\n"
                    + "\n".join(
                        f"adj_draft_{i:05d}     po_{short_hash(random.Random(1410 + i), 20)}  {'JPY' if i % 3 else 'KRW'}  {(v := random.Random(1410 + i).randint(1200, 980000)) * 100:<14}  {v:<15}  DEBIT merchant_payable / CREDIT recon_suspense"
                        for i in range(90)
                    )
                    + "\n... 1227 more\nDRY RUN: 1317 adjustment entries drafted, none written",
                    seconds=3.2,
                ),
            ),
        ),
        A(
            "Noted: adjustments for the 1317 payouts are due December 11. Next steps: generate the adjustment entries in dry-run form for Lindiwe to review, then open the PR with the parser fix and the JPY fixture."
        ),
    ],
    [
        Fact("number", ("04:30",), "when settlement files land, said only by the user"),
        Fact("person", ("Lindiwe", "finance ops"), "who signs off adjustments"),
        Fact("constraint", ("sandbox",), "no calls to the PSP sandbox"),
        Fact("tool_output", ("mismatched_payouts=1317",), "mismatch count after a long table"),
        Fact("tool_output", ("e41d07b",), "the commit that broke it, in a long git log"),
        Fact("conclusion", ("zero-decimal", "JPY"), "cause, concluded in a reply"),
        Fact("number", ("86 merchants",), "merchants affected, summed in a reply"),
        Fact("constraint", ("adjustment entries",), "no direct ledger writes"),
        Fact("decision", ("ISO 4217", "HUF"), "exponent table rather than a list, and why"),
        Fact("path", ("settlement_v2.py",), "parser patched"),
        Fact("path", ("settlement_2026-11-30_jpy.csv",), "fixture added"),
        Fact("tool_output", ("12500 == 1250000",), "assertion of the failing test"),
        Fact("number", ("December 11",), "adjustment deadline, the corrected value"),
    ],
)

# -- g5: search index rebuild ------------------------------------------------------------------


def _cat_indices(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "health status index                                uuid                   pri rep docs.count docs.deleted store.size pri.store.size"
    ]
    names = (
        [f"logs-storefront-2026.11.{d:02d}" for d in range(1, 31)]
        + [f"orders_v{v}" for v in (3, 4)]
        + [f"reviews_v{v}" for v in (11, 12)]
        + [f"suggest_v{v}" for v in (5, 6)]
        + [f".ds-metrics-{i}" for i in range(1, 21)]
        + ["sellers_v2", "categories_v9", "synonyms_v3", "promotions_v14", "products_v6"]
    )
    for name in names:
        docs = rng.randint(90_000, 26_000_000)
        lines.append(
            f"green  open   {name:<36} {short_hash(rng, 22)} {rng.choice([1, 3, 5, 10, 12]):>3} {rng.choice([1, 2]):>3} {docs:>10} {rng.randint(0, docs // 20):>12} {rng.randint(1, 480)}.{rng.randint(1, 9)}gb {rng.randint(1, 240)}.{rng.randint(1, 9)}gb"
        )
    planted = "green  open   products_v7                          Qm3xT0cbR2qL8vYk1NwE4A  10   2   18734412      2201937    412.6gb        137.5gb"
    return lines[0] + "\n" + bury(lines[1:], {0.52: planted})


def _mapping_v7() -> str:
    fields = {
        "sku": {"type": "keyword"},
        "title": {
            "type": "text",
            "analyzer": "product_text",
            "fields": {"raw": {"type": "keyword", "ignore_above": 256}},
        },
        "brand": {"type": "keyword"},
        "category_path": {"type": "keyword"},
        "price_minor": {"type": "long"},
        "currency": {"type": "keyword"},
        "in_stock": {"type": "boolean"},
        "rating": {"type": "half_float"},
        "review_count": {"type": "integer"},
        "dimensions": {
            "properties": {
                "weight_g": {"type": "float"},
                "height_mm": {"type": "integer"},
                "width_mm": {"type": "integer"},
                "depth_mm": {"type": "integer"},
            }
        },
        "attributes": {"type": "flattened"},
        "created_at": {"type": "date"},
        "updated_at": {"type": "date"},
        "seller_id": {"type": "keyword"},
        "tags": {"type": "keyword"},
        "description": {"type": "text", "analyzer": "product_text"},
        "color": {"type": "keyword", "normalizer": "lowercase"},
        "size": {"type": "keyword"},
        "gtin": {"type": "keyword"},
        "popularity": {"type": "rank_feature"},
    }
    body = {
        "settings": {
            "number_of_shards": 10,
            "number_of_replicas": 2,
            "refresh_interval": "1s",
            "analysis": {
                "analyzer": {
                    "product_text": {
                        "tokenizer": "standard",
                        "filter": [
                            "lowercase",
                            "asciifolding",
                            "product_synonyms",
                            "english_stemmer",
                        ],
                    }
                },
                "filter": {
                    "product_synonyms": {
                        "type": "synonym_graph",
                        "synonyms_path": "analysis/synonyms_v3.txt",
                    },
                    "english_stemmer": {"type": "stemmer", "language": "light_english"},
                },
            },
        },
        "mappings": {"dynamic": "strict", "properties": fields},
    }
    return json.dumps(body, indent=2)


def _reindex_task(seed: int) -> str:
    rng = random.Random(seed)
    failures = []
    for _ in range(24):
        failures.append(
            {
                "index": "products_v8",
                "id": f"sku-{rng.randint(1000000, 9999999)}",
                "cause": {
                    "type": "version_conflict_engine_exception",
                    "reason": f"[sku-{rng.randint(1000000, 9999999)}]: version conflict, document already exists (current version [1])",
                },
                "status": 409,
            }
        )
    failures.insert(
        13,
        {
            "index": "products_v8",
            "id": "sku-4410297",
            "cause": {
                "type": "mapper_parsing_exception",
                "reason": "failed to parse field [dimensions.weight_g] of type [integer] in document with id 'sku-4410297'. Preview of field's value: '12.5'",
                "caused_by": {
                    "type": "illegal_argument_exception",
                    "reason": "Value [12.5] has a decimal part",
                },
            },
            "status": 400,
        },
    )
    return json.dumps(
        {
            "completed": True,
            "task": {
                "node": "nB4ZqV1xS3mC0k2pLw9rTg",
                "id": 88341712,
                "type": "transport",
                "action": "indices:data/write/reindex",
                "status": {
                    "total": 18734412,
                    "updated": 0,
                    "created": 7702118,
                    "deleted": 0,
                    "batches": 7703,
                    "version_conflicts": 24,
                    "noops": 0,
                    "retries": {"bulk": 0, "search": 0},
                    "throttled_millis": 1611820,
                    "requests_per_second": 5000.0,
                    "throttled_until_millis": 0,
                },
                "description": "reindex from [products_v7] to [products_v8]",
                "start_time_in_millis": 1796628001201,
                "running_time_in_nanos": 1612044117893,
                "cancellable": True,
            },
            "response": {
                "took": 1612044,
                "timed_out": False,
                "total": 18734412,
                "created": 7702118,
                "batches": 7703,
                "failures": failures,
            },
        },
        indent=2,
    )


def _py_search(seed: int, count: int) -> str:
    rng = random.Random(seed)
    lines = [
        "import argparse",
        "import time",
        "",
        "from opensearchpy import OpenSearch",
        "",
        "from search.client import client_from_env",
        "",
    ]
    for i in range(count):
        noun = rng.choice(["alias", "index", "task", "mapping", "batch", "shard", "snapshot"])
        lines += [
            f"def _{noun}_{i}(client: OpenSearch, name: str) -> dict:",
            f"    resp = client.indices.get(index=name)  # {noun} lookup",
            f"    return resp.get(name, {{}}).get('{rng.choice(['settings', 'mappings', 'aliases'])}', {{}})",
            "",
        ]
    return "\n".join(lines)


def _health_log(seed: int, count: int) -> str:
    rng = random.Random(seed)
    return "\n".join(
        f"2026-12-07T1{rng.randint(0, 5)}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z status=green nodes=5 data_nodes=5 active_shards={rng.randint(620, 680)} relocating={rng.choice([0, 0, 0, 2, 4])} initializing={rng.choice([0, 0, 1, 3])} unassigned=0 pending_tasks={rng.randint(0, 6)} search_p99_ms={rng.randint(38, 140)} indexing_rate={rng.randint(2100, 6400)}/s"
        for _ in range(count)
    )


G5 = Session(
    "g5-search-reindex",
    [
        U(
            "We need to rebuild the products index so we can add the SKU n-gram analyzer for partial SKU search. Rafael is our search relevance engineer: analyzer changes go through him. The cluster serves live storefront traffic, so throttle the reindex to 5000 docs/s at most."
        ),
        A(
            "Looking at the indices, the aliases and the current mapping first.",
            Call(
                "Bash",
                {
                    "command": "curl -s 'https://search-prod.internal:9200/_cat/indices?v&s=index' -u $OS_USER:$OS_PASS",
                    "description": "List indices",
                },
                _cat_indices(1501),
            ),
            Call(
                "Bash",
                {
                    "command": "curl -s 'https://search-prod.internal:9200/_cat/aliases?v' -u $OS_USER:$OS_PASS",
                    "description": "List aliases",
                },
                "alias       index          filter routing.index routing.search is_write_index\nproducts    products_v7    -      -             -              true\norders      orders_v4      -      -             -              true\nreviews     reviews_v12    -      -             -              true\nsuggest     suggest_v6     -      -             -              true\nsellers     sellers_v2     -      -             -              true\ncategories  categories_v9  -      -             -              true\npromotions  promotions_v14 -      -             -              true",
            ),
            Call(
                "Read",
                {"file_path": "/srv/search/search/mappings/products_v7.json"},
                numbered(_mapping_v7()),
            ),
        ),
        U(
            "One rule for the whole job: the products alias must never point at two indices at once. The storefront would return every product twice."
        ),
        A(
            "Understood: the swap will be a single atomic _aliases call with a remove and an add. Writing the new mapping: same fields plus sku.ngram, and weight stays as it is for now.",
            Call(
                "Write",
                {
                    "file_path": "/srv/search/search/mappings/products_v8.json",
                    "content": _mapping_v7()
                    .replace('"number_of_replicas": 2', '"number_of_replicas": 0')
                    .replace('"refresh_interval": "1s"', '"refresh_interval": "-1"')
                    .replace(
                        '"weight_g": {\n            "type": "float"',
                        '"weight_g": {\n            "type": "integer"',
                    )
                    .replace(
                        '"sku": {\n        "type": "keyword"\n      }',
                        '"sku": {\n        "type": "keyword",\n        "fields": {"ngram": {"type": "text", "analyzer": "sku_ngram"}}\n      }',
                    ),
                },
                "File created successfully at: /srv/search/search/mappings/products_v8.json",
            ),
            Call(
                "Read",
                {"file_path": "/srv/search/search/reindex/run_reindex.py"},
                numbered(
                    _py_search(1502, 18)
                    + "\ndef start(client: OpenSearch, source: str, dest: str, rps: float) -> str:\n    resp = client.reindex(\n        body={'source': {'index': source, 'size': 1000}, 'dest': {'index': dest, 'op_type': 'create'}},\n        wait_for_completion=False,\n        requests_per_second=rps,\n        slices='auto',\n    )\n    return resp['task']\n\n\ndef main() -> None:\n    parser = argparse.ArgumentParser()\n    parser.add_argument('--source', required=True)\n    parser.add_argument('--dest', required=True)\n    parser.add_argument('--rps', type=float, default=-1)\n    args = parser.parse_args()\n    print(start(client_from_env(), args.source, args.dest, args.rps))\n"
                ),
            ),
        ),
        U(
            "Create it with 12 primary shards. Actually no, keep 10 primary shards: five data nodes, and 12 would put three shards on two of them."
        ),
        A(
            "Keeping 10 primary shards as in v7. The script defaults to no throttle, so I'm making the limit mandatory.",
            Call(
                "Edit",
                {
                    "file_path": "/srv/search/search/reindex/run_reindex.py",
                    "old_string": "    parser.add_argument('--rps', type=float, default=-1)",
                    "new_string": "    parser.add_argument('--rps', type=float, required=True)  # live cluster: always throttled",
                },
                edited(
                    "/srv/search/search/reindex/run_reindex.py",
                    "    parser.add_argument('--source', required=True)\n    parser.add_argument('--dest', required=True)\n    parser.add_argument('--rps', type=float, required=True)  # live cluster: always throttled\n    args = parser.parse_args()",
                    88,
                ),
            ),
            Call(
                "Bash",
                {
                    "command": "curl -s -XPUT 'https://search-prod.internal:9200/products_v8' -H 'content-type: application/json' -d @search/mappings/products_v8.json -u $OS_USER:$OS_PASS && python -m search.reindex.run_reindex --source products_v7 --dest products_v8 --rps 5000",
                    "description": "Create products_v8 and start the reindex",
                },
                '{"acknowledged":true,"shards_acknowledged":true,"index":"products_v8"}\nnB4ZqV1xS3mC0k2pLw9rTg:88341712',
            ),
        ),
        A(
            "At roughly 4,800 docs/s that's about 65 minutes for the 18.7M documents. I'll check the task as it runs.",
            Call(
                "Bash",
                {
                    "command": "scripts/watch_health.sh --every 30 --count 150",
                    "description": "Watch cluster health during the reindex",
                },
                _health_log(1503, 150),
            ),
        ),
        A(
            "The task reports completed far too early for 18.7M documents. Reading its result.",
            Call(
                "Bash",
                {
                    "command": "curl -s 'https://search-prod.internal:9200/_tasks/nB4ZqV1xS3mC0k2pLw9rTg:88341712' -u $OS_USER:$OS_PASS",
                    "description": "Reindex task result",
                },
                _reindex_task(1504),
            ),
        ),
        A(
            "It stopped at about 41% (7.7M of 18.7M). The cause: some legacy products store weight_g with a decimal part, like 12.5, and the integer mapping I gave v8 rejects them, which aborts the reindex; the version conflicts are only the retried slices re-creating documents that already exist.",
            Call(
                "Grep",
                {
                    "pattern": "weight_g",
                    "path": "/srv/search",
                    "output_mode": "content",
                    "-n": True,
                },
                "search/mappings/products_v7.json:96:          \"weight_g\": {\nsearch/mappings/products_v8.json:99:          \"weight_g\": {\nsearch/ingest/product_doc.py:41:    'weight_g': round(p.weight_kg * 1000, 1) if p.weight_kg else None,\nsearch/ingest/product_doc.py:42:    # half grams matter for jewellery listings\nservices/shipping/rates.py:118:    billable = max(doc['dimensions']['weight_g'], volumetric_g(doc))\nservices/shipping/rates.py:119:    # rates step every 0.5 g below 100 g\ntests/ingest/test_product_doc.py:77:    assert doc['dimensions']['weight_g'] == 12.5",
            ),
        ),
        A(
            "Decision: map weight_g as scaled_float with a scaling_factor of 10 rather than integer or float, since shipping rates step every half gram below 100 g so the decimal must survive, and scaled_float stores it compactly. Deleting the partial index and recreating it.",
            Call(
                "Edit",
                {
                    "file_path": "/srv/search/search/mappings/products_v8.json",
                    "old_string": '"weight_g": {\n            "type": "integer"\n          }',
                    "new_string": '"weight_g": {\n            "type": "scaled_float",\n            "scaling_factor": 10\n          }',
                },
                edited(
                    "/srv/search/search/mappings/products_v8.json",
                    '        "properties": {\n          "weight_g": {\n            "type": "scaled_float",\n            "scaling_factor": 10\n          },\n          "height_mm": {\n            "type": "integer"\n          },',
                    98,
                ),
            ),
            Call(
                "Bash",
                {
                    "command": "curl -s -XDELETE 'https://search-prod.internal:9200/products_v8' -u $OS_USER:$OS_PASS && curl -s -XPUT 'https://search-prod.internal:9200/products_v8' -H 'content-type: application/json' -d @search/mappings/products_v8.json -u $OS_USER:$OS_PASS && python -m search.reindex.run_reindex --source products_v7 --dest products_v8 --rps 5000",
                    "description": "Recreate and restart",
                },
                '{"acknowledged":true}\n{"acknowledged":true,"shards_acknowledged":true,"index":"products_v8"}\nnB4ZqV1xS3mC0k2pLw9rTg:88419034',
            ),
            Call(
                "Bash",
                {
                    "command": "scripts/watch_health.sh --every 30 --count 160",
                    "description": "Watch cluster health",
                },
                _health_log(1505, 160),
            ),
        ),
        U(
            "Plan to swap the alias at 14:00 UTC once it's done. Update: ops moved the storefront deploy freeze, swap at 16:30 UTC instead, after the freeze lifts."
        ),
        A(
            "Swap moved to 16:30 UTC. Writing the swap script now so it's one atomic call.",
            Call(
                "Write",
                {
                    "file_path": "/srv/search/search/reindex/swap_alias.py",
                    "content": "from search.client import client_from_env\n\n\ndef swap(alias: str, old: str, new: str) -> None:\n    # one request: the alias never points at both indices\n    client_from_env().indices.update_aliases(body={'actions': [\n        {'remove': {'index': old, 'alias': alias}},\n        {'add': {'index': new, 'alias': alias, 'is_write_index': True}},\n    ]})\n",
                },
                "File created successfully at: /srv/search/search/reindex/swap_alias.py",
            ),
        ),
        A(
            "Where it stands: products_v8 is rebuilding from products_v7 at 5000 docs/s with weight_g as scaled_float; once it finishes, set replicas back to 2 and refresh to 1s, Rafael checks the sku.ngram analyzer on a sample of queries, then the alias swaps at 16:30 UTC in one atomic call."
        ),
    ],
    [
        Fact("person", ("Rafael", "relevance"), "analyzer approver and role"),
        Fact("constraint", ("5000",), "reindex throttle"),
        Fact("tool_output", ("18734412",), "products_v7 doc count, mid-table"),
        Fact("constraint", ("two indices",), "alias never on two indices"),
        Fact("path", ("products_v8.json",), "mapping written"),
        Fact("number", ("10 primary shards",), "shard count, the corrected value"),
        Fact("path", ("run_reindex.py",), "script edited"),
        Fact("tool_output", ("88341712",), "first reindex task id"),
        Fact("number", ("65 minutes",), "estimated reindex time, said in a reply"),
        Fact("tool_output", ("dimensions.weight_g",), "field that failed, mid-JSON"),
        Fact("conclusion", ("weight_g", "decimal"), "why the reindex stopped"),
        Fact("decision", ("scaled_float", "half gram"), "scaled_float and why"),
        Fact("number", ("16:30",), "alias swap time, the later value"),
    ],
)

SESSIONS = [G1, G2, G3, G4, G5]
