# ruff: noqa: E501  (scripted session data: long tool outputs read better unwrapped)
"""Set J: tuning sessions (per-fact results allowed), written without reading the summarizer.

Five domains no other set uses: a Kubernetes autoscaler that flaps, an S3 storage bill that
spikes after a lifecycle rule change, a certificate rotation outage on a VM-based Envoy fleet, a
Rust workspace whose CI build time doubled and a Unicode normalization bug that lets two accounts
share one username. Each session is long (tens of thousands of tokens): outputs of 50-300 lines
(kubectl and helm output, cost reports, certificate dumps, build timings, logs, git logs, test
runs, stack traces) with the planted value among many values shaped like it, several files per
turn, Claude Code shapes (Bash, Read, Edit, MultiEdit, Write, Grep, Glob) and Codex shapes (shell
argv with both output envelopes, apply_patch). Values are restated and corrected (the correction
is the fact) or superseded (the later one is the fact); reasons, limits, people and conclusions
are worded differently in each session, and some numbers are only ever said in conversation.
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


def _oneline_log(
    seed: int, count: int, authors: list[str], subjects: list[str], planted: dict[float, str]
) -> str:
    """`git log --format='%h %<(16)%an %ar  %s'`: hash, author, relative age, subject."""
    rng = random.Random(seed)
    lines = []
    for i in range(count):
        age = f"{1 + i * 40 // count} days ago"
        subject = rng.choice(subjects).format(n=rng.randint(11, 4800))
        lines.append(f"{short_hash(rng, 9)} {rng.choice(authors):<16} {age:<12} {subject}")
    return bury(lines, planted)


# -- j1: a Kubernetes HPA that flaps ---------------------------------------------------------------

_K8S_DIR = "/home/dev/platform-deploy"
_SERVICES = [
    "cart-api",
    "catalog-api",
    "search-api",
    "pricing-api",
    "inventory-sync",
    "promo-engine",
    "reviews-api",
    "session-store",
    "image-resizer",
    "notify-worker",
    "recs-api",
    "gateway",
]


def _pod(rng: random.Random, svc: str) -> str:
    return f"{svc}-{short_hash(rng, 9)}-{''.join(rng.choice('bcdfghjklmnpqrstvwxz2456789') for _ in range(5))}"


def _hpa_describe(seed: int) -> str:
    rng = random.Random(seed)
    head = [
        "Name:                                                  checkout-api",
        "Namespace:                                             storefront",
        "Labels:                                                app.kubernetes.io/instance=checkout-api",
        "                                                       app.kubernetes.io/managed-by=Helm",
        "                                                       app.kubernetes.io/name=checkout-api",
        "                                                       helm.sh/chart=checkout-api-3.14.2",
        "Annotations:                                           meta.helm.sh/release-name: checkout-api",
        "                                                       meta.helm.sh/release-namespace: storefront",
        "CreationTimestamp:                                     Tue, 14 Apr 2026 09:12:40 +0000",
        "Reference:                                             Deployment/checkout-api",
        "Metrics:                                               ( current / target )",
        "  resource cpu on pods  (as a percentage of request):  311% (467m) / 60%",
        "  resource memory on pods  (as a percentage of request):  48% (1007Mi) / 80%",
        "Min replicas:                                          6",
        "Max replicas:                                          30",
        "Behavior:",
        "  Scale Up:",
        "    Stabilization Window: 0 seconds",
        "    Select Policy: Max",
        "    Policies:",
        "      - Type: Pods     Value: 4    Period: 15 seconds",
        "      - Type: Percent  Value: 100  Period: 15 seconds",
        "  Scale Down:",
        "    Stabilization Window: 0 seconds",
        "    Select Policy: Max",
        "    Policies:",
        "      - Type: Percent  Value: 100  Period: 15 seconds",
        "Deployment pods:                                       23 current / 30 desired",
        "Conditions:",
        "  Type            Status  Reason              Message",
        "  ----            ------  ------              -------",
        "  AbleToScale     True    SucceededRescale    the HPA controller was able to update the target scale to 30",
        "  ScalingActive   True    ValidMetricFound    the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)",
        "  ScalingLimited  True    TooManyReplicas     the desired replica count is more than the maximum replica count",
        "Events:",
        "  Type     Reason                        Age                    From                       Message",
        "  ----     ------                        ----                   ----                       -------",
    ]
    events = []
    for i in range(75):
        age = f"{rng.randint(1, 59)}m{rng.randint(0, 59)}s"
        if rng.random() < 0.12:
            events.append(
                f"  Warning  FailedGetResourceMetric       {age:<22} horizontal-pod-autoscaler  failed to get cpu utilization: did not receive metrics for targeted pods (pods might be unready)"
            )
            continue
        up = i % 2 == 0
        size = rng.randint(14, 30) if up else rng.randint(6, 12)
        reason = (
            "cpu resource utilization (percentage of request) above target"
            if up
            else "All metrics below target"
        )
        events.append(
            f"  Normal   SuccessfulRescale             {age:<22} horizontal-pod-autoscaler  New size: {size}; reason: {reason}"
        )
    return "\n".join(head + events)


def _values_prod() -> str:
    env = "\n".join(
        f"    - name: {k}\n      value: {v!r}"
        for k, v in [
            ("SPRING_PROFILES_ACTIVE", "prod"),
            ("JAVA_TOOL_OPTIONS", "-XX:MaxRAMPercentage=70 -XX:+UseG1GC"),
            ("CHECKOUT_PAYMENT_TIMEOUT_MS", "4500"),
            ("CHECKOUT_CART_TTL_MINUTES", "90"),
            ("CHECKOUT_FRAUD_SCORE_URL", "http://fraud-scorer.risk.svc:8080"),
            ("CHECKOUT_TAX_URL", "http://tax-engine.finance.svc:8080"),
            ("CHECKOUT_INVENTORY_URL", "http://inventory-sync.storefront.svc:8080"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://otel-collector.observability:4317"),
            ("OTEL_TRACES_SAMPLER_ARG", "0.05"),
            ("DB_POOL_MAX", "20"),
            ("DB_POOL_MIN", "4"),
            ("DB_HOST", "pgbouncer.orders-db.svc"),
            ("REDIS_HOST", "session-store.storefront.svc"),
            ("FEATURE_ONE_CLICK", "true"),
            ("FEATURE_SPLIT_SHIPMENT", "false"),
        ]
    )
    return f"""# values for checkout-api in prod (eu-west-1, cluster shop-prod-2)
# owners: storefront team; autoscaling changes need a platform on-call approval
image:
  repository: 412877302155.dkr.ecr.eu-west-1.amazonaws.com/storefront/checkout-api
  tag: 2026.11.28-4f2c91a
  pullPolicy: IfNotPresent

replicaCount: 6

serviceAccount:
  create: true
  name: checkout-api
  annotations:
    eks.amazonaws.com/role-arn: arn:aws:iam::412877302155:role/checkout-api-prod

podAnnotations:
  prometheus.io/scrape: "true"
  prometheus.io/port: "9404"
  sidecar.istio.io/inject: "true"
  proxy.istio.io/config: '{{"holdApplicationUntilProxyStarts": true}}'

service:
  type: ClusterIP
  port: 8080
  managementPort: 8081

ingress:
  enabled: true
  className: istio
  hosts:
    - host: checkout.shop.example.com
      paths:
        - path: /api/checkout
          pathType: Prefix
  tls:
    - secretName: checkout-shop-tls
      hosts:
        - checkout.shop.example.com

resources:
  requests:
    cpu: 150m
    memory: 2Gi
  limits:
    cpu: "2"
    memory: 3Gi

autoscaling:
  enabled: true
  minReplicas: 6
  maxReplicas: 30
  targetCPUUtilizationPercentage: 60
  targetMemoryUtilizationPercentage: 80

readinessProbe:
  httpGet:
    path: /actuator/health/readiness
    port: 8081
  initialDelaySeconds: 10
  periodSeconds: 5
  failureThreshold: 3

livenessProbe:
  httpGet:
    path: /actuator/health/liveness
    port: 8081
  initialDelaySeconds: 60
  periodSeconds: 10
  failureThreshold: 6

podDisruptionBudget:
  enabled: true
  minAvailable: 4

topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: ScheduleAnyway
  - maxSkew: 2
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway

affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
        - matchExpressions:
            - key: karpenter.sh/nodepool
              operator: In
              values: ["general-arm64", "general-amd64"]

tolerations:
  - key: workload-class
    operator: Equal
    value: storefront
    effect: NoSchedule

env:
{env}

configMap:
  application-prod.yaml: |
    server:
      shutdown: graceful
      tomcat:
        threads:
          max: 200
          min-spare: 20
        accept-count: 100
    spring:
      lifecycle:
        timeout-per-shutdown-phase: 25s
      datasource:
        hikari:
          maximum-pool-size: 20
          minimum-idle: 4
          connection-timeout: 3000
    management:
      endpoints:
        web:
          exposure:
            include: health,prometheus,info
      metrics:
        distribution:
          percentiles-histogram:
            http.server.requests: true
    checkout:
      retry:
        payment:
          max-attempts: 2
          backoff-ms: 250
        inventory:
          max-attempts: 3
          backoff-ms: 100

terminationGracePeriodSeconds: 40
"""


def _top_pods(seed: int) -> str:
    rng = random.Random(seed)
    rows = ["NAME                                        CPU(cores)   MEMORY(bytes)"]
    for i in range(130):
        svc = rng.choice(_SERVICES) if i % 5 else "checkout-api"
        cpu = rng.randint(20, 1900) if svc == "checkout-api" else rng.randint(5, 480)
        if cpu in (600, 750):
            cpu += 3
        rows.append(
            f"{_pod(rng, svc):<43} {cpu}m{'':<{11 - len(str(cpu))}} {rng.randint(180, 2900)}Mi"
        )
    return "\n".join(rows)


def _stern_startup(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    apps = {
        "cart-api": "CartApplication",
        "pricing-api": "PricingApplication",
        "promo-engine": "PromoEngineApplication",
        "reviews-api": "ReviewsApplication",
        "recs-api": "RecsApplication",
    }
    templates = [
        "INFO  o.s.b.w.e.tomcat.TomcatWebServer - Tomcat initialized with port 8080 (http)",
        "INFO  o.h.e.t.j.p.i.JtaPlatformInitiator - HHH000490: Using JtaPlatform implementation: [NoJtaPlatform]",
        "INFO  c.z.h.HikariDataSource - HikariPool-1 - Start completed.",
        "INFO  o.s.b.a.e.web.EndpointLinksResolver - Exposing 3 endpoint(s) beneath base path '/actuator'",
        "WARN  o.s.b.a.o.j.JpaBaseConfiguration - spring.jpa.open-in-view is enabled by default",
        "INFO  i.m.c.i.l.LoggingMeterRegistry - publishing metrics for LoggingMeterRegistry every 1m",
        "INFO  o.a.k.c.c.KafkaConsumer - [Consumer clientId=promo-1, groupId=promo] Subscribed to topic(s): promo.events",
        "INFO  c.s.s.c.CacheWarmer - warmed {n} entries in {ms} ms",
    ]
    lines = []
    for _ in range(110):
        svc = rng.choice(list(apps))
        pod = _pod(rng, svc)
        ts = f"2026-12-07T08:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(100, 999)}Z"
        if rng.random() < 0.14:
            t = rng.uniform(7, 29)
            msg = f"INFO  c.s.{svc.split('-')[0]}.{apps[svc]} - Started {apps[svc]} in {t:.1f} seconds (process running for {t + rng.uniform(0.8, 2.4):.1f})"
        else:
            msg = rng.choice(templates).format(n=rng.randint(100, 9000), ms=rng.randint(40, 900))
        lines.append(f"{pod} app {ts} {msg}")
    return bury(lines, planted)


def _grep_hpa_targets(seed: int) -> str:
    rng = random.Random(seed)
    out = []
    for svc in [
        *_SERVICES,
        "checkout-api",
        "payments-api",
        "fraud-scorer",
        "tax-engine",
        "ledger-writer",
    ]:
        for env in ("dev", "staging", "prod"):
            out.append(
                f"charts/{svc}/values-{env}.yaml:{rng.randint(40, 90)}:  targetCPUUtilizationPercentage: {rng.choice([50, 60, 65, 70, 75, 80])}"
            )
            if rng.random() < 0.5:
                out.append(
                    f"charts/{svc}/values-{env}.yaml:{rng.randint(91, 99)}:  scaleDownWindow: {rng.choice([120, 180, 240, 420])}"
                )
    return "\n".join(out)


_HPA_TEMPLATE = """{{- if .Values.autoscaling.enabled }}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "checkout-api.fullname" . }}
  labels:
    {{- include "checkout-api.labels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "checkout-api.fullname" . }}
  minReplicas: {{ .Values.autoscaling.minReplicas }}
  maxReplicas: {{ .Values.autoscaling.maxReplicas }}
  metrics:
    {{- if .Values.autoscaling.targetCPUUtilizationPercentage }}
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ .Values.autoscaling.targetCPUUtilizationPercentage }}
    {{- end }}
    {{- if .Values.autoscaling.targetMemoryUtilizationPercentage }}
    - type: Resource
      resource:
        name: memory
        target:
          type: Utilization
          averageUtilization: {{ .Values.autoscaling.targetMemoryUtilizationPercentage }}
    {{- end }}
{{- end }}
"""


def _kubeconform(seed: int) -> str:
    rng = random.Random(seed)
    kinds = [
        "Deployment",
        "Service",
        "ConfigMap",
        "ServiceAccount",
        "PodDisruptionBudget",
        "HorizontalPodAutoscaler",
        "VirtualService",
        "DestinationRule",
        "ServiceMonitor",
    ]
    lines = []
    for svc in [*_SERVICES, "checkout-api"]:
        for kind in kinds:
            lines.append(f"stdin - {kind} {svc} is valid ({rng.randint(1, 40)}ms)")
    lines.append(
        "stdin - ServiceMonitor checkout-api skipped: could not find schema for ServiceMonitor"
    )
    lines.append(
        f"Summary: {len(lines)} resources found parsing stdin - Valid: {len(lines) - 13}, Invalid: 0, Errors: 0, Skipped: 13"
    )
    return "\n".join(lines)


def _k6_summary(planted_p95: str) -> str:
    rng = random.Random(1131)
    groups = ["browse", "add_to_cart", "checkout_submit", "payment_confirm", "order_status"]
    lines = [
        "          /\\      |‾‾| /‾‾/   /‾‾/",
        "     /\\  /  \\     |  |/  /   /  /",
        "    /  \\/    \\    |     (   /   ‾‾\\",
        "   /          \\   |  |\\  \\ |  (‾)  |",
        "  / __________ \\  |__| \\__\\ \\_____/ .io",
        "",
        "     execution: local",
        "        script: loadtest/checkout-peak.js",
        "        output: prometheus-rw (http://prometheus.observability:9090/api/v1/write)",
        "",
        "     scenarios: (100.00%) 1 scenario, 900 max VUs, 21m30s max duration (incl. graceful stop):",
        "              * peak: Up to 2400.00 iterations/s for 21m0s over 5 stages (maxVUs: 900, gracefulStop: 30s)",
        "",
    ]
    for g in groups:
        lines.append(f"     █ {g}")
        for check in ["status is 200", "body has id", "latency budget"]:
            lines.append(f"       ✓ {check}")
        if g == "checkout_submit":
            lines.append("       ✗ no 5xx\n        ↳  99% — ✓ 412088 / ✗ 311")
        lines.append("")
    for metric in ["checks", "data_received", "data_sent"]:
        lines.append(
            f"     {metric:<28}: {rng.uniform(10, 99):.2f}%  ✓ {rng.randint(10**5, 10**6)}  ✗ {rng.randint(0, 900)}"
        )
    for g in groups:
        for metric in [
            "http_req_blocked",
            "http_req_connecting",
            "http_req_duration",
            "http_req_receiving",
            "http_req_sending",
            "http_req_tls_handshaking",
            "http_req_waiting",
        ]:
            p95 = f"{rng.uniform(0.5, 240):.2f}ms"
            if g == "checkout_submit" and metric == "http_req_duration":
                p95 = planted_p95
            lines.append(
                f"     {metric + '{group:::' + g + '}':<58}: avg={rng.uniform(0.1, 90):.2f}ms min={rng.uniform(0, 3):.2f}ms med={rng.uniform(0.1, 60):.2f}ms max={rng.uniform(200, 3000):.2f}ms p(90)={rng.uniform(0.3, 200):.2f}ms p(95)={p95}"
            )
    lines += [
        f"     http_reqs{'':<49}: 2014471 1598.786s/s",
        f"     iteration_duration{'':<40}: avg=1.21s min=204.11ms med=1.02s max=14.8s p(90)=2.11s p(95)=2.93s",
        f"     iterations{'':<48}: 1003522 796.44/s",
        f"     vus{'':<55}: 12  min=12 max=900",
        "",
        "running (21m00.4s), 000/900 VUs, 1003522 complete and 0 interrupted iterations",
        "peak ✓ [======================================] 000/900 VUs  21m0s  2400.00 iters/s",
    ]
    return "\n".join(lines)


def _hpa_watch(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "NAME                       REFERENCE                 TARGETS                  MINPODS   MAXPODS   REPLICAS   AGE"
    ]
    replicas = 8
    for i in range(80):
        replicas = max(6, min(24, replicas + rng.choice([-1, 0, 0, 0, 1, 1])))
        rps = rng.randint(60, 95)
        lines.append(
            f"keda-hpa-checkout-api      Deployment/checkout-api   {rps}/90 (avg)               6         40        {replicas:<10} {12 + i // 3}m"
        )
    return "\n".join(lines)


def _argocd_diff(seed: int) -> str:
    rng = random.Random(seed)
    lines = ["===== keda.sh/ScaledObject storefront-canary/checkout-api ======", "0a1,38"]
    for key in [
        "apiVersion",
        "kind",
        "metadata",
        "spec",
        "pollingInterval",
        "cooldownPeriod",
        "minReplicaCount",
        "maxReplicaCount",
        "advanced",
        "triggers",
    ]:
        lines.append(f"> {key}: ...")
    lines.append("===== autoscaling/HorizontalPodAutoscaler storefront-canary/checkout-api ======")
    lines.append("1,32d0")
    lines.append("===== apps/Deployment storefront-canary/checkout-api ======")
    for _ in range(45):
        k = rng.choice(
            ["image", "env", "resources", "annotations", "labels", "volumeMounts", "ports"]
        )
        lines.append(
            f"  {rng.randint(10, 400)}c{rng.randint(10, 400)}\n<       {k}: {short_hash(rng, 12)}\n---\n>       {k}: {short_hash(rng, 12)}"
        )
    return "\n".join(lines)


_K8S_AUTHORS = ["priya.raman", "jonas.eklund", "t.wilk", "mbarros", "renovate[bot]", "ayo.adebayo"]
_K8S_SUBJECTS = [
    "charts/{n}: bump image tag",
    "storefront: raise memory limit for search-api",
    "platform: karpenter nodepool general-arm64 consolidation",
    "payments-api: scale-down behavior block (#{n})",
    "chore(deps): update helm release kube-prometheus-stack to v58.{n}",
    "catalog-api: add startupProbe",
    "argocd: ApplicationSet for storefront-canary",
    "istio: 1.22.{n} sidecar",
    "recs-api: move to KEDA kafka scaler",
    "checkout-api: values-prod tag bump",
]

J1 = Session(
    "j1-hpa-flapping",
    [
        U(
            f"checkout-api in the storefront namespace keeps see-sawing between 6 and 30 replicas every few minutes. It's been doing that for about 26 hours now and the cluster autoscaler is churning nodes along with it. Priya Raman is carrying the platform pager this week and she's the one who approves anything we change in prod. Charts are in {_K8S_DIR}."
        ),
        A(
            "I'll start with what the autoscaler itself reports and the chart values it was rendered from.",
            Call(
                "Bash",
                {
                    "command": "kubectl -n storefront describe hpa checkout-api",
                    "description": "Describe the checkout-api HPA",
                },
                _hpa_describe(1101),
            ),
            Call(
                "Read",
                {"file_path": f"{_K8S_DIR}/charts/checkout-api/values-prod.yaml"},
                numbered(_values_prod()),
            ),
        ),
        A(
            "Average CPU is at several times the 60% target while the request is tiny. Looking at per-pod CPU and at how long fresh pods take to start.",
            Call(
                "Bash",
                {
                    "command": "kubectl -n storefront top pods --sort-by=cpu",
                    "description": "CPU and memory per pod",
                },
                _top_pods(1102),
            ),
            Call(
                "Bash",
                {
                    "command": "stern -n storefront --since 2h --selector 'tier=jvm' --template '{{.PodName}} {{.ContainerName}} {{.Message}}{{\"\\n\"}}' | grep -v healthcheck | head -n 220",
                    "description": "Startup logs of the JVM services",
                },
                _stern_startup(
                    1103,
                    {
                        0.47: f"{_pod(random.Random(7), 'checkout-api')} app 2026-12-07T08:31:52.604Z INFO  c.s.checkout.CheckoutApplication - Started CheckoutApplication in 41.7 seconds (process running for 43.9)",
                    },
                ),
            ),
        ),
        A(
            "Here's the mechanism. A new checkout-api pod spends its first ~40 seconds compiling hot paths and burns one to two cores while doing it, against a request of 150m. So every pod the HPA adds pushes the average utilisation up instead of down, which makes it add more; once the new pods settle the average drops below target and, with the scale-down stabilization window at 0 seconds, it removes them at once. It is a feedback loop between warm-up CPU and a zero scale-down window, not real traffic: the request rate at the gateway was flat over the same hours."
        ),
        U(
            "Makes sense. Two ground rules before you touch anything. Never more than 40 pods of checkout-api: pgbouncer in front of orders-db has 800 client slots and every pod opens a pool of 20. And nobody runs kubectl apply or kubectl edit against prod; every change lands through Argo CD from this repo."
        ),
        A(
            "Understood. Checking how the other charts configure their HPAs and reading the template.",
            Call(
                "Grep",
                {
                    "pattern": "targetCPUUtilizationPercentage|scaleDownWindow",
                    "path": f"{_K8S_DIR}/charts",
                    "output_mode": "content",
                    "-n": True,
                },
                _grep_hpa_targets(1104),
            ),
            Call(
                "Read",
                {"file_path": f"{_K8S_DIR}/charts/checkout-api/templates/hpa.yaml"},
                numbered(_HPA_TEMPLATE),
            ),
        ),
        A(
            "Adding a behavior block driven by values, and raising the CPU request so warm-up doesn't read as 1000% utilisation.",
            Call(
                "Edit",
                {
                    "file_path": f"{_K8S_DIR}/charts/checkout-api/templates/hpa.yaml",
                    "old_string": "  minReplicas: {{ .Values.autoscaling.minReplicas }}\n  maxReplicas: {{ .Values.autoscaling.maxReplicas }}",
                    "new_string": "  minReplicas: {{ .Values.autoscaling.minReplicas }}\n  maxReplicas: {{ .Values.autoscaling.maxReplicas }}\n  behavior:\n    scaleDown:\n      stabilizationWindowSeconds: {{ .Values.autoscaling.scaleDownWindow }}\n      policies:\n        - type: Pods\n          value: 2\n          periodSeconds: 60",
                },
                edited(
                    f"{_K8S_DIR}/charts/checkout-api/templates/hpa.yaml",
                    "  minReplicas: {{ .Values.autoscaling.minReplicas }}\n  maxReplicas: {{ .Values.autoscaling.maxReplicas }}\n  behavior:\n    scaleDown:\n      stabilizationWindowSeconds: {{ .Values.autoscaling.scaleDownWindow }}\n      policies:\n        - type: Pods\n          value: 2\n          periodSeconds: 60",
                    13,
                ),
            ),
            Call(
                "MultiEdit",
                {
                    "file_path": f"{_K8S_DIR}/charts/checkout-api/values-prod.yaml",
                    "edits": [
                        {"old_string": "    cpu: 150m", "new_string": "    cpu: 500m"},
                        {
                            "old_string": "  targetMemoryUtilizationPercentage: 80",
                            "new_string": "  targetMemoryUtilizationPercentage: 80\n  scaleDownWindow: 300",
                        },
                    ],
                },
                "Applied 2 edits to " + f"{_K8S_DIR}/charts/checkout-api/values-prod.yaml:\n"
                '1. Replaced "    cpu: 150m" with "    cpu: 500m"\n'
                '2. Replaced "  targetMemoryUtilizationPercentage: 80" with "  targetMemoryUtilizationPercentage: 80\n  scaleDownWindow: 300"',
            ),
        ),
        U(
            "Priya looked at the diff: 300 is too short for her. She wants the scale-down window at 600s, same as payments-api runs with. Tomasz Wilk leads the payments team and owns that HPA, so if you copy anything else from their block, check with him first."
        ),
        A(
            "Setting the window to 600 and rendering the chart to validate it.",
            Call(
                "Edit",
                {
                    "file_path": f"{_K8S_DIR}/charts/checkout-api/values-prod.yaml",
                    "old_string": "  scaleDownWindow: 300",
                    "new_string": "  scaleDownWindow: 600",
                },
                edited(
                    f"{_K8S_DIR}/charts/checkout-api/values-prod.yaml",
                    "autoscaling:\n  enabled: true\n  minReplicas: 6\n  maxReplicas: 30\n  targetCPUUtilizationPercentage: 60\n  targetMemoryUtilizationPercentage: 80\n  scaleDownWindow: 600",
                    48,
                ),
            ),
            Call(
                "Bash",
                {
                    "command": f'cd {_K8S_DIR} && for c in charts/*/; do helm template "$c" -f "$c/values-prod.yaml"; done | kubeconform -strict -summary -verbose -',
                    "description": "Render every chart and validate",
                },
                _kubeconform(1105),
            ),
        ),
        A(
            "The window stops the immediate scale-down, but it doesn't fix what the HPA measures. Two options: keep tuning a CPU target, or scale on request rate with KEDA's Prometheus scaler. I'd go with KEDA on requests per second, because CPU on a fresh JVM pod mostly measures JIT compilation, not customers; the request rate at the Istio sidecar is what we actually need capacity for, and the recs-api chart already runs a ScaledObject so the operator is installed."
        ),
        U(
            "Agreed, go with KEDA. Target 120 requests per second per pod. Hmm, no: last quarter's load test said p95 holds only up to 90 rps per pod, so use 90 rps."
        ),
        A(
            "Writing the ScaledObject with a 90 rps target and maxReplicaCount 40 (your pgbouncer ceiling), and checking the other charts' ScaledObjects for the conventions.",
            Call(
                "Glob",
                {"pattern": "charts/*/templates/scaledobject.yaml", "path": _K8S_DIR},
                f"{_K8S_DIR}/charts/recs-api/templates/scaledobject.yaml\n{_K8S_DIR}/charts/notify-worker/templates/scaledobject.yaml\n{_K8S_DIR}/charts/image-resizer/templates/scaledobject.yaml",
            ),
            Call(
                "Write",
                {
                    "file_path": f"{_K8S_DIR}/charts/checkout-api/templates/scaledobject.yaml",
                    "content": '{{- if .Values.keda.enabled }}\napiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata:\n  name: {{ include "checkout-api.fullname" . }}\nspec:\n  scaleTargetRef:\n    name: {{ include "checkout-api.fullname" . }}\n  minReplicaCount: {{ .Values.autoscaling.minReplicas }}\n  maxReplicaCount: 40  # pgbouncer: 800 slots / 20 per pod\n  pollingInterval: 15\n  cooldownPeriod: 600\n  advanced:\n    horizontalPodAutoscalerConfig:\n      behavior:\n        scaleDown:\n          stabilizationWindowSeconds: {{ .Values.autoscaling.scaleDownWindow }}\n  triggers:\n    - type: prometheus\n      metadata:\n        serverAddress: http://prometheus.observability:9090\n        query: sum(rate(istio_requests_total{destination_workload="checkout-api",reporter="destination"}[1m]))\n        threshold: "90"\n{{- end }}\n',
                },
                f"File created successfully at: {_K8S_DIR}/charts/checkout-api/templates/scaledobject.yaml",
            ),
        ),
        A(
            "Running the peak load test against staging with the new scaler, and watching the replica count while it runs.",
            Call(
                "Bash",
                {
                    "command": "k6 run --out experimental-prometheus-rw -e BASE_URL=https://checkout.staging.shop.example.com loadtest/checkout-peak.js",
                    "description": "Peak load test on staging",
                    "timeout": 1800000,
                },
                _k6_summary("187.33ms"),
            ),
            Call(
                "Bash",
                {
                    "command": "kubectl --context shop-staging -n storefront get hpa keda-hpa-checkout-api -w --request-timeout=25m | head -n 90",
                    "description": "Watch the KEDA-managed HPA during the test",
                },
                _hpa_watch(1106),
            ),
        ),
        A(
            "Replicas moved smoothly between 8 and 24 with no oscillation, and the submit step's p95 stayed inside the 250 ms budget. The one thing the test did show is that the readiness gate flips before warm-up is over, so traffic lands on cold pods."
        ),
        U(
            "Then raise the CPU request again, 500m isn't enough for the warm-up burst: make it 750m. For rollout, push it to storefront-canary first, because that app only takes 5% of traffic and has its own Argo application we can roll back alone."
        ),
        A(
            "Raising the request to 750m and diffing the canary application.",
            Call(
                "Edit",
                {
                    "file_path": f"{_K8S_DIR}/charts/checkout-api/values-prod.yaml",
                    "old_string": "    cpu: 500m",
                    "new_string": "    cpu: 750m",
                },
                edited(
                    f"{_K8S_DIR}/charts/checkout-api/values-prod.yaml",
                    "resources:\n  requests:\n    cpu: 750m\n    memory: 2Gi",
                    41,
                ),
            ),
            Call(
                "Bash",
                {
                    "command": f"cd {_K8S_DIR} && git log --format='%h %<(16)%an %ar  %s' -n 140",
                    "description": "Recent history of the deploy repo",
                },
                _oneline_log(
                    1107,
                    140,
                    _K8S_AUTHORS,
                    _K8S_SUBJECTS,
                    {
                        0.3: "9b1e07c4d t.wilk           13 days ago  payments-api: scaleDownWindow 600 after the October flapping"
                    },
                ),
            ),
            Call(
                "Bash",
                {
                    "command": "argocd app diff storefront-canary --local charts/checkout-api --local-repo-root . 2>&1 | head -n 300",
                    "description": "What Argo CD would change on the canary",
                },
                _argocd_diff(1108),
            ),
        ),
        A(
            "Where this stands: the flapping came from warm-up CPU feeding the CPU-based HPA with a zero scale-down window. checkout-api now scales with KEDA on Istio requests per second (90 rps per pod, at most 40 pods), the scale-down window is 600s, the CPU request is 750m, and the change goes to storefront-canary through Argo CD once Priya approves."
        ),
    ],
    [
        Fact("person", ("Priya Raman", "pager"), "platform on-call who approves prod changes"),
        Fact("person", ("Tomasz Wilk", "payments"), "leads the payments team, owns its HPA"),
        Fact("number", ("26 hours",), "how long it has flapped, said in conversation"),
        Fact("tool_output", ("311% (467m)",), "current CPU in the HPA description"),
        Fact("tool_output", ("41.7 seconds",), "checkout-api startup time among other services'"),
        Fact("tool_output", ("187.33ms",), "checkout_submit p95 in the k6 summary"),
        Fact("conclusion", ("feedback loop", "warm-up"), "why it flaps"),
        Fact("conclusion", ("readiness gate", "cold pods"), "what the load test showed"),
        Fact("constraint", ("40 pods", "pgbouncer"), "replica ceiling and its reason"),
        Fact("constraint", ("Argo CD",), "prod changes only through Argo CD"),
        Fact("number", ("600s",), "scale-down window, the corrected value"),
        Fact("number", ("90 rps",), "per-pod target, the corrected value"),
        Fact("decision", ("KEDA", "JIT"), "scale on request rate, because CPU measures JIT"),
        Fact("decision", ("storefront-canary", "5%"), "roll out to the canary first and why"),
        Fact("number", ("750m",), "CPU request, the later value"),
        Fact("path", ("charts/checkout-api/templates/scaledobject.yaml",), "ScaledObject written"),
    ],
)


# -- j2: an S3 bill that spiked after a lifecycle rule rewrite (Codex) ---------------------------

_S3_DIR = "/srv/infra/storage-cost"
_BUCKETS = [
    "vidhaus-media-uploads",
    "vidhaus-transcode-scratch",
    "vidhaus-logs-archive",
    "vidhaus-analytics-raw",
    "vidhaus-backups-eu",
    "vidhaus-static-web",
    "vidhaus-ml-features",
    "vidhaus-legal-records",
]
_USAGE_TYPES = [
    "EUC1-TimedStorage-ByteHrs",
    "EUC1-TimedStorage-INT-FA-ByteHrs",
    "EUC1-TimedStorage-INT-IA-ByteHrs",
    "EUC1-TimedStorage-GIR-ByteHrs",
    "EUC1-TimedStorage-GlacierByteHrs",
    "EUC1-Requests-Tier1",
    "EUC1-Requests-Tier2",
    "EUC1-DataTransfer-Out-Bytes",
    "EUC1-DataTransfer-Regional-Bytes",
    "EUC1-Retrieval-SIA",
    "EUC1-EarlyDelete-ByteHrs",
    "EUC1-Monitoring-Automation-INT",
    "EUC1-TagStorage-TagHrs",
    "EUC1-Inventory-ObjectsListed",
]


def _cost_explorer(seed: int) -> str:
    rng = random.Random(seed)
    groups = []
    for month in ("2026-08-01", "2026-09-01", "2026-10-01", "2026-11-01"):
        for bucket in _BUCKETS:
            for usage in rng.sample(_USAGE_TYPES, 5):
                amount = round(rng.uniform(0.4, 1900), 2)
                if bucket == "vidhaus-media-uploads" and usage == "EUC1-TimedStorage-ByteHrs":
                    amount = {
                        "2026-08-01": 2011.4,
                        "2026-09-01": 2087.93,
                        "2026-10-01": 2630.02,
                        "2026-11-01": 11284.19,
                    }[month]
                groups.append(
                    {
                        "TimePeriod": month,
                        "Keys": [bucket, usage],
                        "UnblendedCost": {"Amount": f"{amount}", "Unit": "USD"},
                        "UsageQuantity": {
                            "Amount": f"{round(amount * rng.uniform(30, 48), 3)}",
                            "Unit": "GB-Mo" if "Storage" in usage else "N/A",
                        },
                    }
                )
    if not any(
        g["Keys"] == ["vidhaus-media-uploads", "EUC1-TimedStorage-ByteHrs"]
        and g["TimePeriod"] == "2026-11-01"
        for g in groups
    ):
        groups.insert(
            len(groups) * 7 // 8,
            {
                "TimePeriod": "2026-11-01",
                "Keys": ["vidhaus-media-uploads", "EUC1-TimedStorage-ByteHrs"],
                "UnblendedCost": {"Amount": "11284.19", "Unit": "USD"},
                "UsageQuantity": {"Amount": "490616.957", "Unit": "GB-Mo"},
            },
        )
    lines = [
        "TIMEPERIOD   BUCKET                        USAGE_TYPE                          COST_USD     QUANTITY"
    ]
    for g in groups:
        lines.append(
            f"{g['TimePeriod']}  {g['Keys'][0]:<29} {g['Keys'][1]:<35} {g['UnblendedCost']['Amount']:>10}   {g['UsageQuantity']['Amount']} {g['UsageQuantity']['Unit']}"
        )
    return "\n".join(lines)


def _lifecycle_json(noncurrent: bool) -> str:
    rules = [
        {
            "ID": "scratch-expire",
            "Filter": {"Prefix": "scratch/"},
            "Status": "Enabled",
            "Expiration": {"Days": 7},
        },
        {
            "ID": "renditions-tiering",
            "Filter": {"Prefix": "renditions/"},
            "Status": "Enabled",
            "Transitions": [{"Days": 30, "StorageClass": "STANDARD_IA"}],
        },
        {
            "ID": "masters-archive",
            "Filter": {
                "And": {"Prefix": "masters/", "Tags": [{"Key": "archive", "Value": "true"}]}
            },
            "Status": "Enabled",
            "Transitions": [
                {"Days": 90, "StorageClass": "GLACIER_IR"},
                {"Days": 365, "StorageClass": "DEEP_ARCHIVE"},
            ],
        },
        {
            "ID": "thumbnails",
            "Filter": {"Prefix": "thumbs/"},
            "Status": "Enabled",
            "Transitions": [{"Days": 60, "StorageClass": "INTELLIGENT_TIERING"}],
        },
        {
            "ID": "uploads-inbox",
            "Filter": {"Prefix": "inbox/"},
            "Status": "Enabled",
            "Expiration": {"Days": 14},
        },
    ]
    if noncurrent:
        rules.append(
            {
                "ID": "noncurrent-cleanup",
                "Filter": {},
                "Status": "Enabled",
                "NoncurrentVersionExpiration": {"NoncurrentDays": 30},
                "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7},
            }
        )
    return json.dumps({"Rules": rules}, indent=4)


def _athena_prefixes(seed: int) -> str:
    rng = random.Random(seed)
    prefixes = [
        f"{top}/{sub}/"
        for top in ("renditions", "masters", "thumbs", "inbox", "captions", "previews", "scratch")
        for sub in ("2024", "2025", "2026", "tmp", "hls", "dash", "legacy")
    ]
    lines = [
        "| prefix                 | is_latest | storage_class       | objects     | bytes_tib |",
        "|------------------------|-----------|---------------------|-------------|-----------|",
    ]
    rows = []
    for p in prefixes:
        for latest in ("true", "false"):
            tib = round(rng.uniform(0.01, 38), 2)
            if p == "renditions/tmp/" and latest == "false":
                tib = 214.87
            rows.append(
                (
                    tib,
                    f"| {p:<22} | {latest:<9} | {rng.choice(['STANDARD', 'STANDARD_IA', 'GLACIER_IR', 'INTELLIGENT_TIERING']):<19} | {rng.randint(1000, 90_000_000):>11} | {tib:>9} |",
                )
            )
    rows.sort(key=lambda r: -r[0])
    return "\n".join(
        [*lines, *(r for _, r in rows), f"({len(rows)} rows, scanned 3.81 GB, 14.2 s)"]
    )


def _cloudtrail(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    events = [
        "PutBucketTagging",
        "GetBucketLifecycle",
        "PutBucketPolicy",
        "GetBucketVersioning",
        "PutBucketNotificationConfiguration",
        "PutBucketEncryption",
        "GetBucketAcl",
        "PutObjectLockConfiguration",
        "PutBucketReplication",
    ]
    principals = [
        "role/ci-storage-deployer",
        "role/OrganizationAccountAccessRole",
        "user/hana.okafor",
        "user/luis.becerra",
        "role/aws-config-recorder",
        "role/security-audit",
    ]
    lines = [
        "EVENT_TIME             EVENT_NAME                            BUCKET                        PRINCIPAL"
    ]
    for _ in range(105):
        lines.append(
            f"2026-{rng.randint(9, 11):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z   {rng.choice(events):<37} {rng.choice(_BUCKETS):<29} arn:aws:iam::771203884410:{rng.choice(principals)}"
        )
    return bury(lines, planted)


def _multipart(seed: int) -> str:
    rng = random.Random(seed)
    uploads = []
    for _ in range(40):
        uploads.append(
            {
                "UploadId": short_hash(rng, 40),
                "Key": f"masters/{rng.randint(2024, 2026)}/{short_hash(rng, 12)}/{rng.choice(['source.mov', 'source.mxf', 'proxy.mp4', 'audio.wav'])}",
                "Initiated": f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00+00:00",
                "StorageClass": "STANDARD",
                "Initiator": {
                    "DisplayName": rng.choice(
                        ["ingest-worker", "uploader-lambda", "ci-storage-deployer"]
                    )
                },
            }
        )
    return json.dumps(
        {"Uploads": uploads, "IsTruncated": True, "NextKeyMarker": "masters/2026/zz"}, indent=2
    )


def _pytest_j2(seed: int, tail: str) -> str:
    rng = random.Random(seed)
    names = [
        "rule",
        "prefix",
        "filter",
        "tags",
        "noncurrent",
        "transition",
        "expiration",
        "multipart",
    ]
    lines = ["collected 164 items", ""]
    for i in range(164):
        lines.append(
            f"tests/test_{rng.choice(['lifecycle', 'policy_diff', 'render', 'guardrails'])}.py::test_{rng.choice(names)}_{rng.choice(names)}_{i} PASSED"
        )
    return "\n".join(lines) + "\n" + tail


_S3_AUTHORS = ["hana.okafor", "luis.becerra", "ci-storage-deployer", "mk.sato", "dependabot[bot]"]
_S3_SUBJECTS = [
    "policies: tag masters for archive ({n})",
    "lifecycle: thumbs to INTELLIGENT_TIERING",
    "tools: lifecycle_diff prints rule ids",
    "ci: run guardrail tests on every policy change",
    "policies: analytics-raw expire after 400 days",
    "Bump boto3 to 1.35.{n}",
    "inventory: weekly parquet for media-uploads",
    "policies: logs-archive to DEEP_ARCHIVE after 180d",
]

J2 = Session(
    "j2-s3-lifecycle-cost",
    [
        U(
            f"Our S3 line went from about $3,100 a month to $19,400 in November and nobody changed traffic. Hana Okafor from FinOps flagged it in the monthly review; she'll want an explanation she can paste into her report. Lifecycle policies and tooling are in {_S3_DIR}."
        ),
        A(
            "Pulling the cost by bucket and usage type for the last four months.",
            Call(
                "shell",
                codex_shell(
                    "aws ce get-cost-and-usage --time-period Start=2026-08-01,End=2026-12-01 --granularity MONTHLY --metrics UnblendedCost UsageQuantity --filter file://filters/s3.json --group-by Type=TAG,Key=bucket Type=DIMENSION,Key=USAGE_TYPE | python tools/ce_table.py",
                    _S3_DIR,
                ),
                codex_json(_cost_explorer(1201), seconds=6.8),
            ),
        ),
        A(
            "Standard storage in vidhaus-media-uploads more than quadrupled in November. Looking at the bucket's lifecycle configuration as deployed and as committed.",
            Call(
                "shell",
                codex_shell(
                    "aws s3api get-bucket-lifecycle-configuration --bucket vidhaus-media-uploads && aws s3api get-bucket-versioning --bucket vidhaus-media-uploads",
                    _S3_DIR,
                ),
                codex_text(
                    _lifecycle_json(False)
                    + '\n{\n    "Status": "Enabled",\n    "MFADelete": "Disabled"\n}',
                    seconds=1.9,
                ),
            ),
            Call(
                "shell",
                codex_shell("git show HEAD~6:policies/media-uploads.lifecycle.json", _S3_DIR),
                codex_json(_lifecycle_json(True), seconds=0.2),
            ),
        ),
        A(
            "The deployed configuration has no noncurrent-version rule any more, while the older committed one did. Checking when it changed and who pushed it.",
            Call(
                "shell",
                codex_shell(
                    "python tools/trail.py --days 90 --event-source s3.amazonaws.com --fields eventTime,eventName,bucket,principal",
                    _S3_DIR,
                ),
                codex_text(
                    _cloudtrail(
                        1202,
                        {
                            0.62: "2026-10-29T16:42:10Z   PutBucketLifecycleConfiguration       vidhaus-media-uploads         arn:aws:iam::771203884410:role/ci-storage-deployer"
                        },
                    ),
                    seconds=11.3,
                ),
            ),
            Call(
                "shell",
                codex_shell(
                    "git log --format='%h %<(16)%an %ar  %s' -n 120 -- policies/ tools/", _S3_DIR
                ),
                codex_json(
                    _oneline_log(
                        1203,
                        120,
                        _S3_AUTHORS,
                        _S3_SUBJECTS,
                        {
                            0.21: "e07d3a91f mk.sato          38 days ago  policies: media-uploads rewritten from the new template (one rule per prefix)"
                        },
                    ),
                    seconds=0.3,
                ),
            ),
        ),
        A(
            "Found it. On 29 October the CI role pushed a rewritten lifecycle document for vidhaus-media-uploads, generated from the new one-rule-per-prefix template, and the catch-all rule carrying NoncurrentVersionExpiration and AbortIncompleteMultipartUpload was lost in the rewrite. Versioning is on and the transcoder overwrites renditions in place, so every overwrite since then has left a noncurrent copy billed at Standard rates that nothing ever expires. The bill is the pile of old versions, not new data."
        ),
        U(
            "Luis Becerra is the tech lead on ingest and that bucket is his; he says the transcoder rewrites renditions/tmp constantly. Can you size what's sitting there?"
        ),
        A(
            "Querying the latest S3 Inventory through Athena, split by prefix and whether the version is current, and listing the incomplete multipart uploads.",
            Call(
                "shell",
                codex_shell(
                    "python tools/athena.py --workgroup finops --sql sql/inventory_by_prefix.sql --param bucket=vidhaus-media-uploads --param dt=2026-12-06",
                    _S3_DIR,
                ),
                codex_json(_athena_prefixes(1204), seconds=17.9),
            ),
            Call(
                "shell",
                codex_shell(
                    "aws s3api list-multipart-uploads --bucket vidhaus-media-uploads --max-uploads 40",
                    _S3_DIR,
                ),
                codex_text(_multipart(1205), seconds=2.2),
            ),
        ),
        A(
            "Most of it is noncurrent versions under renditions/tmp/, which nobody can read through the normal API, plus a long tail of abandoned multipart uploads under masters/. Restoring the cleanup rule would save roughly $9,200 a month."
        ),
        U(
            "Rules from Hana and legal: never touch anything under legal-hold/, that prefix is under Object Lock in compliance mode and any rule that matches it will fail the whole PUT. And noncurrent versions have to be kept at least 30 days, audit wants that undelete window; never go lower."
        ),
        U(
            "Set the noncurrent expiry to 60 days. Scratch that: Hana says storage past the floor is wasted money, so use 35 days, which gives a little margin over the 30-day floor."
        ),
        A(
            "Restoring the rule with a prefix filter per top-level folder so legal-hold/ is never matched, and 35 days for noncurrent versions.",
            Call(
                "shell",
                codex_shell(
                    "sed -n 1,80p policies/media-uploads.lifecycle.json && ls policies/", _S3_DIR
                ),
                codex_text(
                    _lifecycle_json(False)
                    + "\n"
                    + "\n".join(f"{b.removeprefix('vidhaus-')}.lifecycle.json" for b in _BUCKETS),
                    seconds=0.1,
                ),
            ),
            Call(
                "apply_patch",
                codex_patch(
                    "policies/media-uploads.lifecycle.json",
                    '            "Expiration": {\n                "Days": 14\n            }\n        }\n    ]',
                    '            "Expiration": {\n                "Days": 14\n            }\n        },\n        {\n            "ID": "noncurrent-renditions",\n            "Filter": {"Prefix": "renditions/"},\n            "Status": "Enabled",\n            "NoncurrentVersionExpiration": {"NoncurrentDays": 35}\n        },\n        {\n            "ID": "noncurrent-masters",\n            "Filter": {"Prefix": "masters/"},\n            "Status": "Enabled",\n            "NoncurrentVersionExpiration": {"NoncurrentDays": 35},\n            "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 3}\n        }\n    ]',
                    '"ID": "uploads-inbox"',
                ),
                codex_patched("policies/media-uploads.lifecycle.json"),
            ),
        ),
        A(
            "On the multipart uploads I set 3 days after initiation. Luis confirmed the biggest ingest, the 8K camera masters, finishes in under a day, so three days leaves room for a retried upload without keeping orphans for a week as the old rule did."
        ),
        U(
            "Fine. And for renditions in general, should they go to Glacier Instant Retrieval after 30 days?"
        ),
        A(
            "I'd move renditions/ to Intelligent-Tiering instead of Glacier Instant Retrieval. The player fetches old renditions unpredictably (a catalogue title gets popular again and its renditions are read thousands of times), and GIR charges per GB retrieved, while Intelligent-Tiering moves objects back to frequent access for free. Patching that rule and adding a guardrail to the diff tool so a rule can never match legal-hold/.",
            Call(
                "apply_patch",
                codex_patch(
                    "policies/media-uploads.lifecycle.json",
                    '            "Transitions": [\n                {\n                    "Days": 30,\n                    "StorageClass": "STANDARD_IA"\n                }\n            ]',
                    '            "Transitions": [\n                {\n                    "Days": 0,\n                    "StorageClass": "INTELLIGENT_TIERING"\n                }\n            ]',
                    '"ID": "renditions-tiering"',
                ),
                codex_patched("policies/media-uploads.lifecycle.json"),
            ),
            Call(
                "apply_patch",
                codex_patch(
                    "tools/lifecycle_diff.py",
                    "def check(rules):\n    problems = []",
                    'PROTECTED = ("legal-hold/",)\nMIN_NONCURRENT_DAYS = 30\n\n\ndef check(rules):\n    problems = []\n    for rule in rules:\n        prefix = rule.get("Filter", {}).get("Prefix", "")\n        if any(p.startswith(prefix) for p in PROTECTED):\n            problems.append(f"{rule[\'ID\']}: matches a protected prefix")\n        days = rule.get("NoncurrentVersionExpiration", {}).get("NoncurrentDays")\n        if days is not None and days < MIN_NONCURRENT_DAYS:\n            problems.append(f"{rule[\'ID\']}: noncurrent days {days} below {MIN_NONCURRENT_DAYS}")',
                    "def check(rules):",
                ),
                codex_patched("tools/lifecycle_diff.py"),
            ),
        ),
        A(
            "Running the policy tests and the diff against what is deployed.",
            Call(
                "shell",
                codex_shell("python -m pytest tests -q -p no:cacheprovider", _S3_DIR),
                codex_json(
                    _pytest_j2(
                        1206,
                        "FAILED tests/test_guardrails.py::test_catch_all_rule_is_rejected - AssertionError: rule 'noncurrent-cleanup' with empty filter was accepted\n1 failed, 163 passed in 4.02s",
                    ),
                    code=1,
                    seconds=5.1,
                ),
            ),
        ),
        A(
            "The guardrail misses an empty filter: an empty prefix is a prefix of legal-hold/ only if I check it the other way round. Fixing the comparison.",
            Call(
                "apply_patch",
                codex_patch(
                    "tools/lifecycle_diff.py",
                    "        if any(p.startswith(prefix) for p in PROTECTED):",
                    "        if not prefix or any(p.startswith(prefix) or prefix.startswith(p) for p in PROTECTED):",
                    "def check(rules):",
                ),
                codex_patched("tools/lifecycle_diff.py"),
            ),
            Call(
                "shell",
                codex_shell(
                    "python -m pytest tests -q -p no:cacheprovider && python tools/lifecycle_diff.py --bucket vidhaus-media-uploads policies/media-uploads.lifecycle.json",
                    _S3_DIR,
                ),
                codex_text(
                    _pytest_j2(1207, "164 passed in 3.88s")
                    + "\n~ renditions-tiering: Transitions[0] STANDARD_IA@30 -> INTELLIGENT_TIERING@0\n+ noncurrent-renditions: NoncurrentVersionExpiration 35d\n+ noncurrent-masters: NoncurrentVersionExpiration 35d, AbortIncompleteMultipartUpload 3d\n= scratch-expire, masters-archive, thumbnails, uploads-inbox unchanged\nguardrails: ok",
                    seconds=6.0,
                ),
            ),
        ),
        U(
            "Hana re-ran the numbers with the inventory you pulled, including the Intelligent-Tiering move: she now puts the saving at $12,700 a month, not the earlier figure. Lifecycle expirations run asynchronously, so how long before we see it?"
        ),
        A(
            "S3 evaluates lifecycle rules once a day and queues the expirations, so the first noncurrent versions older than 35 days should disappear within 48 hours of the PUT; the cost curve in Cost Explorer lags by another day or so. I'll leave applying the policy to the CI pipeline, which is the only principal allowed to PutBucketLifecycleConfiguration."
        ),
        A(
            "Summary for Hana's report: the November spike ($19,400) came from the 29 October rewrite of the media-uploads lifecycle policy, which dropped the noncurrent-version rule while versioning stayed on; overwritten renditions piled up as noncurrent versions. policies/media-uploads.lifecycle.json now expires noncurrent versions after 35 days (above the 30-day audit floor), aborts multipart uploads after 3 days, moves renditions to Intelligent-Tiering, and never matches legal-hold/. Expected saving: $12,700 a month."
        ),
    ],
    [
        Fact("person", ("Hana Okafor", "FinOps"), "flagged the bill"),
        Fact("person", ("Luis Becerra", "ingest"), "tech lead on ingest, owns the bucket"),
        Fact("number", ("$19,400",), "November bill, said in conversation"),
        Fact("tool_output", ("11284.19",), "media-uploads standard storage cost in November"),
        Fact("tool_output", ("2026-10-29T16:42:10Z",), "when the lifecycle PUT happened"),
        Fact("tool_output", ("214.87",), "noncurrent TiB under renditions/tmp/"),
        Fact("conclusion", ("NoncurrentVersionExpiration", "rewrite"), "cause of the spike"),
        Fact("constraint", ("legal-hold/", "Object Lock"), "never match the legal-hold prefix"),
        Fact("constraint", ("30 days", "undelete"), "noncurrent floor and its reason"),
        Fact("number", ("35 days",), "noncurrent expiry, the corrected value"),
        Fact("decision", ("Intelligent-Tiering", "unpredictably"), "tiering choice and why"),
        Fact("decision", ("three days", "8K camera"), "multipart abort window and why"),
        Fact("number", ("$12,700",), "estimated saving, the later figure"),
        Fact("conclusion", ("once a day", "48 hours"), "when the expirations take effect"),
        Fact("path", ("tools/lifecycle_diff.py",), "guardrail added"),
    ],
)


# -- j3: a certificate rotation outage on a VM-based Envoy edge fleet -------------------------------

_MESH_DIR = "/opt/edge-config"
_EDGE_HOSTS = [
    f"edge-{site}-{n:02d}" for site in ("ams", "fra", "lhr", "cdg", "mad") for n in range(1, 9)
]


def _openssl_chain(seed: int) -> str:
    rng = random.Random(seed)

    def cert(
        subject: str, issuer: str, not_before: str, not_after: str, serial: str, sans: str
    ) -> str:
        modulus = "\n".join(
            "                    " + ":".join(short_hash(rng, 2) for _ in range(15))
            for _ in range(17)
        )
        sig = "\n".join(
            "         " + ":".join(short_hash(rng, 2) for _ in range(18)) for _ in range(14)
        )
        return f"""Certificate:
    Data:
        Version: 3 (0x2)
        Serial Number:
            {serial}
        Signature Algorithm: sha256WithRSAEncryption
        Issuer: {issuer}
        Validity
            Not Before: {not_before}
            Not After : {not_after}
        Subject: {subject}
        Subject Public Key Info:
            Public Key Algorithm: rsaEncryption
                Public-Key: (2048 bit)
                Modulus:
                    00:
{modulus}
                Exponent: 65537 (0x10001)
        X509v3 extensions:
            X509v3 Key Usage: critical
                Digital Signature, Key Encipherment
            X509v3 Extended Key Usage:
                TLS Web Server Authentication, TLS Web Client Authentication
            X509v3 Subject Key Identifier:
                {":".join(short_hash(rng, 2).upper() for _ in range(20))}
            X509v3 Authority Key Identifier:
                {":".join(short_hash(rng, 2).upper() for _ in range(20))}
            X509v3 Subject Alternative Name:
                {sans}
    Signature Algorithm: sha256WithRSAEncryption
    Signature Value:
{sig}"""

    leaf = cert(
        "CN = edge.internal.northwind.io",
        "CN = Northwind Edge Intermediate CA R3",
        "Dec  4 14:01:41 2026 GMT",
        "Dec  7 14:02:11 2026 GMT",
        "5c:19:e4:0b:77:a2:31:d8:90:4f:6e:1a:c3:08:b5:2d:ee:71:46:09",
        "DNS:edge.internal.northwind.io, DNS:*.edge.internal.northwind.io, IP Address:10.40.0.10",
    )
    inter = cert(
        "CN = Northwind Edge Intermediate CA R3",
        "CN = Northwind Root CA 2024",
        "Jan 10 00:00:00 2026 GMT",
        "Jan 10 00:00:00 2028 GMT",
        "1f:02:8c:55:de:41:90:3a:7b:b0:64:11:2e:9d:c8:f3:07:5a:62:e8",
        "DNS:ca.internal.northwind.io",
    )
    return leaf + "\n" + inter


def _envoy_access(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    routes = [
        "/api/v2/orders",
        "/api/v2/cart",
        "/api/v2/auth/token",
        "/static/app.js",
        "/api/v2/search",
        "/healthz",
    ]
    clusters = ["orders_backend", "cart_backend", "auth_backend", "static_origin", "search_backend"]
    lines = []
    for i in range(170):
        code, flags, detail = 200, "-", "via_upstream"
        r = rng.random()
        if r < 0.35:
            code, flags, detail = (
                503,
                "UF,URX",
                "upstream_reset_before_response_started{connection_failure,TLS_error:_268435581:SSL_routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED}",
            )
        elif r < 0.42:
            code, flags, detail = 503, "UH", "no_healthy_upstream"
        elif r < 0.47:
            code, flags, detail = 504, "UT", "response_timeout"
        lines.append(
            f'[2026-12-07T14:{2 + i * 38 // 170:02d}:{rng.randint(0, 59):02d}.{rng.randint(100, 999)}Z] "{rng.choice(["GET", "POST"])} {rng.choice(routes)} HTTP/2" {code} {flags} {detail} {rng.randint(0, 9000)} {rng.randint(0, 90000)} {rng.randint(0, 4000)} - "{rng.randint(10, 250)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}" "{short_hash(rng, 8)}-{short_hash(rng, 4)}" "{rng.choice(clusters)}" "10.40.{rng.randint(1, 30)}.{rng.randint(2, 250)}:8443"'
        )
    return bury(lines, planted)


def _journal_ct(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    msgs = [
        '(runner) rendered "/etc/consul-template.d/templates/{n}.ctmpl" => "/etc/envoy/certs/{n}.pem"',
        '(runner) executing command "/usr/local/bin/edge-cert-hook" from "/etc/envoy/certs/{n}.pem"',
        "(view) vault.write(pki_int/issue/edge-envoy -> {h}) starting fetch",
        "(view) vault.read(secret/data/edge/{n}) marked for retry",
        "(runner) watching 4 dependencies",
        "(runner) all templates rendered",
        "(runner) quiescence timers starting",
        "(child) spawning: systemctl reload envoy",
        "(dedup) acquired lock for template {n}",
    ]
    lines = []
    for i in range(150):
        host = rng.choice(_EDGE_HOSTS)
        lines.append(
            f"Dec 07 {10 + i * 4 // 150:02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} {host} consul-template[{rng.randint(1000, 9000)}]: {rng.choice(['[INFO]', '[DEBUG]', '[INFO]', '[WARN]'])} {rng.choice(msgs).format(n=rng.choice(['edge-leaf', 'edge-chain', 'edge-key', 'upstream-ca']), h=short_hash(rng, 8))}"
        )
    return bury(lines, planted)


def _envoy_certs_json(seed: int) -> str:
    rng = random.Random(seed)
    certs = []
    for name in [
        "edge_leaf",
        "upstream_ca",
        "orders_backend_client",
        "cart_backend_client",
        "auth_backend_client",
        "search_backend_client",
        "static_origin_client",
        "admin_listener",
    ]:
        days = rng.randint(1, 700)
        serial = ":".join(short_hash(rng, 2) for _ in range(20))
        if name == "edge_leaf":
            days, serial = 0, "5c:19:e4:0b:77:a2:31:d8:90:4f:6e:1a:c3:08:b5:2d:ee:71:46:09"
        certs.append(
            {
                "ca_cert": [],
                "cert_chain": [
                    {
                        "path": f"/etc/envoy/certs/{name}.pem",
                        "serial_number": serial.replace(":", ""),
                        "subject_alt_names": [
                            {"dns": f"{name.replace('_', '-')}.internal.northwind.io"}
                        ],
                        "days_until_expiration": str(days),
                        "valid_from": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z",
                        "expiration_time": f"2027-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T00:00:00Z",
                    }
                ],
            }
        )
    return json.dumps({"certificates": certs}, indent=1)


_UNIT_FILE = """[Unit]
Description=Envoy edge proxy
After=network-online.target consul-template.service
Wants=network-online.target

[Service]
Type=simple
User=envoy
Group=envoy
LimitNOFILE=1048576
Environment=ENVOY_CONCURRENCY=8
ExecStartPre=/usr/local/bin/envoy --mode validate -c /etc/envoy/envoy.yaml
ExecStart=/usr/local/bin/envoy -c /etc/envoy/envoy.yaml --concurrency ${ENVOY_CONCURRENCY} --drain-time-s 45 --parent-shutdown-time-s 60 --log-format '[%Y-%m-%d %T.%e][%l] %v'
Restart=always
RestartSec=2
KillSignal=SIGTERM
TimeoutStopSec=70
AmbientCapabilities=CAP_NET_BIND_SERVICE
ProtectSystem=strict
ReadWritePaths=/var/log/envoy /run/envoy
ProtectHome=true
PrivateTmp=true

[Install]
WantedBy=multi-user.target
"""

_CT_HCL = """vault {
  address      = "https://vault.internal.northwind.io:8200"
  renew_token  = true
  retry {
    enabled     = true
    attempts    = 12
    backoff     = "250ms"
    max_backoff = "1m"
  }
}

wait {
  min = "5s"
  max = "30s"
}

template {
  source      = "/etc/consul-template.d/templates/edge-leaf.ctmpl"
  destination = "/etc/envoy/certs/edge_leaf.pem"
  perms       = "0640"
  command     = "systemctl reload envoy"
}

template {
  source      = "/etc/consul-template.d/templates/edge-key.ctmpl"
  destination = "/etc/envoy/certs/edge_leaf.key"
  perms       = "0600"
  command     = "systemctl reload envoy"
}

template {
  source      = "/etc/consul-template.d/templates/upstream-ca.ctmpl"
  destination = "/etc/envoy/certs/upstream_ca.pem"
  perms       = "0644"
}
"""

_LEAF_CTMPL = """{{- with secret "pki_int/issue/edge-envoy" "common_name=edge.internal.northwind.io" "alt_names=*.edge.internal.northwind.io" "ttl=72h" -}}
{{ .Data.certificate }}
{{ .Data.issuing_ca }}
{{- end -}}
"""


def _ansible_run(seed: int) -> str:
    rng = random.Random(seed)
    out = []
    for task in [
        "gather facts",
        "render consul-template config",
        "install sds config",
        "validate envoy config",
        "restart consul-template",
        "wait for certificate file",
        "check /certs endpoint",
    ]:
        out.append(f"\nTASK [edge : {task}] {'*' * 48}")
        for host in _EDGE_HOSTS[:16]:
            out.append(f"{rng.choice(['ok', 'ok', 'changed'])}: [{host}]")
    out.append("\nPLAY RECAP " + "*" * 60)
    for host in _EDGE_HOSTS[:16]:
        out.append(
            f"{host:<26}: ok={rng.randint(9, 14)}  changed={rng.randint(1, 4)}  unreachable=0  failed=0  skipped={rng.randint(0, 3)}  rescued=0  ignored=0"
        )
    return "\n".join(out)


_EDGE_AUTHORS = ["kofi.mensah", "m.dubois", "sven.aa", "lina.haddad", "edge-bot"]
_EDGE_SUBJECTS = [
    "edge: raise http2 max_concurrent_streams",
    "consul-template: pin 0.39.{n}",
    "envoy: 1.31.{n}",
    "edge-{n}: add lhr site",
    "vault: rotate approle secret-id for edge",
    "edge: access log format adds upstream_transport_failure_reason",
    "runbook: drain procedure for anycast sites",
    "envoy: admin listener on 127.0.0.1 only",
]

J3 = Session(
    "j3-cert-rotation",
    [
        U(
            f"Every edge proxy started returning 503s to the backends at 14:02 UTC and it stayed broken for 38 minutes until someone restarted Envoy by hand on all 40 boxes. Certs come from Vault through consul-template; it all lives in {_MESH_DIR}. Kofi Mensah manages the SRE team that runs the edge fleet and wants a write-up today."
        ),
        A(
            "Starting with the certificate Envoy was presenting upstream and the proxy's access log around 14:02.",
            Call(
                "Bash",
                {
                    "command": "ssh edge-ams-03 'sudo openssl crl2pkcs7 -nocrl -certfile /etc/envoy/certs/edge_leaf.pem | openssl pkcs7 -print_certs -text -noout'",
                    "description": "Dump the edge leaf certificate chain",
                },
                _openssl_chain(1301),
            ),
            Call(
                "Bash",
                {
                    "command": "ssh edge-ams-03 'sudo tail -n 170 /var/log/envoy/access.log'",
                    "description": "Edge access log around the outage",
                },
                _envoy_access(
                    1302,
                    {
                        0.03: '[2026-12-07T14:02:12.044Z] "POST /api/v2/orders HTTP/2" 503 UF,URX upstream_reset_before_response_started{connection_failure,TLS_error:_268435581:SSL_routines:OPENSSL_internal:CERTIFICATE_EXPIRED} 0 91 1 - "81.4.112.9" "a91c33f0-77de" "orders_backend" "10.40.7.21:8443"'
                    },
                ),
            ),
        ),
        A(
            "The leaf on disk expired this afternoon, three days after it was issued. Checking what Envoy itself has loaded and what consul-template did in the hours before.",
            Call(
                "Bash",
                {
                    "command": "ssh edge-ams-03 'curl -s 127.0.0.1:9901/certs'",
                    "description": "Certificates loaded in Envoy",
                },
                _envoy_certs_json(1303),
            ),
            Call(
                "Bash",
                {
                    "command": 'ssh edge-ams-03 \'sudo journalctl -u consul-template --since "2026-12-07 10:00" --until "2026-12-07 14:40" --no-pager\' | head -n 200',
                    "description": "consul-template journal",
                },
                _journal_ct(
                    1304,
                    {
                        0.58: 'Dec 07 12:41:37 edge-ams-03 consul-template[2214]: [ERR] (child) command "systemctl reload envoy" exited 1: Failed to reload envoy.service: Job type reload is not applicable for unit envoy.service.'
                    },
                ),
            ),
        ),
        A(
            "Reading the unit file and the consul-template configuration together.",
            Call(
                "Read",
                {"file_path": f"{_MESH_DIR}/roles/edge/files/envoy.service"},
                numbered(_UNIT_FILE),
            ),
            Call(
                "Read",
                {"file_path": f"{_MESH_DIR}/roles/edge/templates/consul-template.hcl"},
                numbered(_CT_HCL),
            ),
            Call(
                "Read",
                {"file_path": f"{_MESH_DIR}/roles/edge/templates/edge-leaf.ctmpl"},
                numbered(_LEAF_CTMPL),
            ),
        ),
        A(
            "So the renewal itself worked: consul-template fetched a fresh leaf at 12:41 and wrote it to disk. What failed is the hand-off. Its command is `systemctl reload envoy`, and envoy.service has no ExecReload line, so systemd refuses the reload and Envoy kept serving the certificate it read at start-up until that one expired. The hook has probably failed on every renewal since the unit was rewritten; until now something else restarted Envoy often enough to hide it."
        ),
        U(
            "Ugh. Marguerite Dubois is the security engineer who owns the Vault PKI, she's asking two things: leaf TTL stays 72h, that's policy and must not go up, and nothing gets a copy of the intermediate's private key."
        ),
        A(
            "Neither needs to change. For the fix there are two ways: give the unit an ExecReload that hot-restarts Envoy, or have Envoy watch the files itself through file-based SDS. I'd go with SDS: a hot restart drains every listener, and the mobile apps hold long-poll connections to /api/v2/events for up to two minutes, so each renewal would cut them all. With SDS Envoy swaps the certificate in place and open connections keep going.",
            Call(
                "Grep",
                {
                    "pattern": "tls_certificate|certificate_chain|private_key|sds",
                    "path": f"{_MESH_DIR}/roles/edge/templates",
                    "output_mode": "content",
                    "-n": True,
                },
                "\n".join(
                    f"{_MESH_DIR}/roles/edge/templates/envoy.yaml.j2:{40 + i * 7}:{'  ' * (4 + i % 3)}{k}"
                    for i, k in enumerate(
                        [
                            "tls_certificates:",
                            '- certificate_chain: { filename: "/etc/envoy/certs/edge_leaf.pem" }',
                            '  private_key: { filename: "/etc/envoy/certs/edge_leaf.key" }',
                        ]
                        * 9
                    )
                ),
            ),
        ),
        A(
            "Writing the SDS resource file and switching the listeners and upstream clusters to it.",
            Call(
                "Write",
                {
                    "file_path": f"{_MESH_DIR}/roles/edge/files/sds/edge-tls.yaml",
                    "content": 'resources:\n- "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret\n  name: edge_leaf\n  tls_certificate:\n    certificate_chain:\n      filename: /etc/envoy/certs/edge_leaf.pem\n    private_key:\n      filename: /etc/envoy/certs/edge_leaf.key\n    watched_directory:\n      path: /etc/envoy/certs\n',
                },
                f"File created successfully at: {_MESH_DIR}/roles/edge/files/sds/edge-tls.yaml",
            ),
            Call(
                "MultiEdit",
                {
                    "file_path": f"{_MESH_DIR}/roles/edge/templates/envoy.yaml.j2",
                    "edits": [
                        {
                            "old_string": '          tls_certificates:\n          - certificate_chain: { filename: "/etc/envoy/certs/edge_leaf.pem" }\n            private_key: { filename: "/etc/envoy/certs/edge_leaf.key" }',
                            "new_string": "          tls_certificate_sds_secret_configs:\n          - name: edge_leaf\n            sds_config:\n              path_config_source:\n                path: /etc/envoy/sds/edge-tls.yaml\n                watched_directory: { path: /etc/envoy/sds }",
                            "replace_all": True,
                        }
                    ],
                },
                f"Applied 1 edit to {_MESH_DIR}/roles/edge/templates/envoy.yaml.j2:\n1. Replaced 9 occurrences of the inline tls_certificates block with tls_certificate_sds_secret_configs",
            ),
            Call(
                "Edit",
                {
                    "file_path": f"{_MESH_DIR}/roles/edge/templates/consul-template.hcl",
                    "old_string": '  perms       = "0640"\n  command     = "systemctl reload envoy"',
                    "new_string": '  perms       = "0640"\n  command     = "/usr/local/bin/edge-cert-check"',
                },
                edited(
                    f"{_MESH_DIR}/roles/edge/templates/consul-template.hcl",
                    'template {\n  source      = "/etc/consul-template.d/templates/edge-leaf.ctmpl"\n  destination = "/etc/envoy/certs/edge_leaf.pem"\n  perms       = "0640"\n  command     = "/usr/local/bin/edge-cert-check"\n}',
                    17,
                ),
            ),
        ),
        U(
            "When should consul-template renew? Vault's default is to fetch again at about two thirds of the lifetime. Let's say 24h before expiry."
        ),
        A(
            "That's 48h into a 72h leaf, close to Vault's default. I'll note it in the template comment; the renewal time itself is driven by Vault's lease, so nothing else to set. Running the role against the staging site.",
            Call(
                "Bash",
                {
                    "command": f"cd {_MESH_DIR} && ansible-playbook -i inventories/staging edge.yml --limit 'edge_staging' --diff 2>&1 | tail -n 150",
                    "description": "Apply the edge role to staging",
                },
                _ansible_run(1305),
            ),
        ),
        U(
            "Kofi just pointed out the staging leafs are issued with ttl=24h there, so renewing 24h before expiry would renew constantly. Make it 36h before expiry in prod instead, and the same rule in staging relative to its TTL."
        ),
        A(
            "Setting renewal to 36h before expiry for prod's 72h leaf (halfway) and documenting it next to the ttl.",
            Call(
                "Edit",
                {
                    "file_path": f"{_MESH_DIR}/roles/edge/templates/edge-leaf.ctmpl",
                    "old_string": '{{- with secret "pki_int/issue/edge-envoy"',
                    "new_string": '{{- /* leaf ttl 72h (PKI policy, never raise); renewed 36h before expiry */ -}}\n{{- with secret "pki_int/issue/edge-envoy"',
                },
                edited(
                    f"{_MESH_DIR}/roles/edge/templates/edge-leaf.ctmpl",
                    '{{- /* leaf ttl 72h (PKI policy, never raise); renewed 36h before expiry */ -}}\n{{- with secret "pki_int/issue/edge-envoy" "common_name=edge.internal.northwind.io" "alt_names=*.edge.internal.northwind.io" "ttl=72h" -}}',
                    1,
                ),
            ),
            Call(
                "Bash",
                {
                    "command": f"cd {_MESH_DIR} && git log --format='%h %<(16)%an %ar  %s' -n 130",
                    "description": "History of the edge config repo",
                },
                _oneline_log(
                    1306,
                    130,
                    _EDGE_AUTHORS,
                    _EDGE_SUBJECTS,
                    {
                        0.44: "3fd0a6e21 sven.aa          17 days ago  envoy.service: hardening (ProtectSystem=strict), drop ExecReload"
                    },
                ),
            ),
        ),
        A(
            "That commit, 3fd0a6e21 from 17 days ago, removed the ExecReload line while hardening the unit; every reload hook since then has failed quietly, and the first leaf issued after it expired today."
        ),
        U(
            "For prod rollout: no more than 2 edge nodes out of rotation at once, anycast can't absorb more per site. Start with ams at 06:30 UTC tomorrow, that's our lowest-traffic window."
        ),
        A(
            "Writing a rollout script that drains and applies in batches of two per site, and testing the certificate check hook on staging.",
            Call(
                "Write",
                {
                    "file_path": f"{_MESH_DIR}/scripts/rollout-sds.sh",
                    "content": '#!/usr/bin/env bash\n# Roll the SDS change site by site, never more than 2 nodes out of anycast at once.\nset -euo pipefail\nsite="${1:?site}"\nfor pair in $(ansible-inventory -i inventories/prod --list | jq -r --arg s "$site" \'.["edge_" + $s].hosts | _nwise(2) | join(",")\'); do\n  ./scripts/drain.sh "$pair"\n  ansible-playbook -i inventories/prod edge.yml --limit "$pair"\n  ./scripts/undrain.sh "$pair"\ndone\n',
                },
                f"File created successfully at: {_MESH_DIR}/scripts/rollout-sds.sh",
            ),
            Call(
                "Bash",
                {
                    "command": "for h in edge-stg-01 edge-stg-02; do ssh $h 'sudo -u consul-template /usr/local/bin/edge-cert-check && curl -s 127.0.0.1:9901/certs | jq -r \".certificates[].cert_chain[0] | [.path, .days_until_expiration] | @tsv\"'; done",
                    "description": "Check the hook and loaded certs on staging",
                },
                "edge-cert-check: /etc/envoy/certs/edge_leaf.pem serial 2a0f91c3 matches Envoy's loaded edge_leaf\n"
                + "\n".join(
                    f"/etc/envoy/certs/{n}.pem\t{random.Random(len(n) * 13 + k).randint(1, 600)}"
                    for k in range(2)
                    for n in [
                        "edge_leaf",
                        "upstream_ca",
                        "orders_backend_client",
                        "cart_backend_client",
                        "auth_backend_client",
                        "search_backend_client",
                    ]
                )
                + "\nedge-cert-check: /etc/envoy/certs/edge_leaf.pem serial 2a0f91c3 matches Envoy's loaded edge_leaf",
            ),
        ),
        A(
            "For Kofi's write-up: the 38-minute outage at 14:02 UTC happened because envoy.service lost its ExecReload in 3fd0a6e21, so consul-template's reload hook failed and Envoy kept an expired leaf in memory. Envoy now loads the leaf through file-based SDS from /etc/envoy/sds/edge-tls.yaml and picks up renewals without a restart; leaf TTL stays 72h, renewal happens 36h before expiry, and the prod rollout starts in ams at 06:30 UTC, two nodes at a time."
        ),
    ],
    [
        Fact("person", ("Kofi Mensah", "SRE team"), "manages the SRE team that runs the edge"),
        Fact("person", ("Marguerite Dubois", "Vault PKI"), "security engineer owning the PKI"),
        Fact("number", ("38 minutes",), "outage length, said in conversation"),
        Fact("tool_output", ("14:02:11",), "leaf Not After"),
        Fact("tool_output", ("Job type reload is not applicable",), "hook failure in the journal"),
        Fact(
            "tool_output",
            ("CERTIFICATE_EXPIRED",),
            "first failing request, among VERIFY_FAILED lines",
        ),
        Fact("conclusion", ("ExecReload", "3fd0a6e21"), "why Envoy kept the old certificate"),
        Fact("constraint", ("72h", "never raise"), "leaf TTL policy"),
        Fact("constraint", ("2 edge nodes",), "rollout batch limit"),
        Fact("decision", ("SDS", "long-poll"), "file-based SDS instead of hot restart, and why"),
        Fact("number", ("36h before expiry",), "renewal time, the corrected value"),
        Fact("number", ("06:30 UTC",), "rollout start, said in conversation"),
        Fact("path", ("/etc/envoy/sds/edge-tls.yaml",), "SDS resource file"),
        Fact("path", ("scripts/rollout-sds.sh",), "rollout script"),
    ],
)


# -- j4: a Rust workspace whose CI build time doubled (Codex) -----------------------------------

_RUST_DIR = "/home/ci/src/quarry"
_CRATES = [
    ("serde", "1.0.215"),
    ("serde_json", "1.0.133"),
    ("tokio", "1.41.1"),
    ("hyper", "1.5.1"),
    ("axum", "0.7.9"),
    ("tower", "0.5.1"),
    ("tracing", "0.1.41"),
    ("tracing-subscriber", "0.3.19"),
    ("sqlx", "0.8.2"),
    ("sqlx-core", "0.8.2"),
    ("sqlx-macros-core", "0.8.2"),
    ("syn", "2.0.90"),
    ("quote", "1.0.37"),
    ("proc-macro2", "1.0.92"),
    ("regex", "1.11.1"),
    ("regex-automata", "0.4.9"),
    ("clap", "4.5.21"),
    ("clap_derive", "4.5.18"),
    ("rustls", "0.23.19"),
    ("ring", "0.17.8"),
    ("aws-lc-sys", "0.24.0"),
    ("prost", "0.13.3"),
    ("prost-derive", "0.13.3"),
    ("tonic", "0.12.3"),
    ("arrow", "53.3.0"),
    ("parquet", "53.3.0"),
    ("chrono", "0.4.38"),
    ("uuid", "1.11.0"),
    ("thiserror", "2.0.3"),
    ("thiserror-impl", "2.0.3"),
    ("anyhow", "1.0.93"),
    ("bytes", "1.9.0"),
    ("futures-util", "0.3.31"),
    ("reqwest", "0.12.9"),
    ("zstd-sys", "2.0.13"),
    ("libsqlite3-sys", "0.30.1"),
]


def _gh_runs(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "STATUS  TITLE                                            WORKFLOW  BRANCH        EVENT         ID           ELAPSED  AGE"
    ]
    for i in range(70):
        minutes = rng.randint(8, 10) if i > 30 else rng.randint(21, 25)
        lines.append(
            f"✓       {rng.choice(['deps: bump', 'feat(ingest): parquet sink', 'fix(cli): --dry-run exit code', 'ci: nextest retries', 'refactor(store)', 'docs: README'])[:46]:<48} ci        {rng.choice(['main', 'main', 'release/0.14', 'dp/macros'])[:12]:<13} {rng.choice(['push', 'pull_request']):<13} {12_400_000_000 - i * rng.randint(3000, 90000)}  {minutes}m{rng.randint(0, 59):02d}s   {1 + i // 5}d"
        )
    return "\n".join(lines)


def _timings(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    lines = [
        "   Compiling with --timings: report written to target/cargo-timings/cargo-timing-20261207T081455Z.html",
        "",
        "Unit                                      Total     Codegen   Features",
    ]
    units = []
    for name, version in _CRATES * 6:
        total = rng.uniform(0.3, 60)
        units.append(
            (
                total,
                f"{name + ' v' + version + rng.choice(['', ' build-script', ' (lib)', ' build-script (run)']):<41} {total:6.1f}s  {rng.uniform(0, total):6.1f}s   {','.join(rng.sample(['default', 'std', 'derive', 'full', 'macros', 'rt-multi-thread', 'tls', 'json', 'alloc'], rng.randint(1, 4)))}",
            )
        )
    for i in range(14):
        total = rng.uniform(5, 80)
        units.append(
            (
                total,
                f"quarry-{['core', 'store', 'ingest', 'query', 'cli', 'api', 'proto'][i % 7]} v0.14.0{' (test)' if i >= 7 else ''}{'':<14} {total:6.1f}s  {rng.uniform(0, total):6.1f}s   default",
            )
        )
    units.sort(key=lambda u: -u[0])
    return (
        "\n".join(lines)
        + "\n"
        + bury([line for _, line in units], planted)
        + "\n\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 19m 02s"
    )


def _cargo_tree_dups(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    lines = []
    for name, version in rng.sample(_CRATES, 20):
        major, minor, _ = version.split(".")
        other = f"{major}.{max(0, int(minor) - rng.randint(1, 4))}.{rng.randint(0, 30)}"
        for v in (other, version):
            lines.append(f"{name} v{v}")
            for depth in range(rng.randint(2, 5)):
                dep, dv = rng.choice(_CRATES)
                lines.append(f"{'│   ' * depth}└── {dep} v{dv}")
            lines.append(
                f"    [build-dependencies]\n    └── quarry-{rng.choice(['core', 'store', 'proto'])} v0.14.0 ({_RUST_DIR}/crates/quarry-{rng.choice(['core', 'store', 'proto'])})"
            )
        lines.append("")
    return bury(lines, planted)


def _sccache_stats() -> str:
    return """Compile requests                   2914
Compile requests executed          2611
Cache hits                           81
Cache hits (C/C++)                   43
Cache hits (Rust)                    38
Cache misses                       2530
Cache misses (C/C++)                  6
Cache misses (Rust)                2524
Cache timeouts                        0
Cache read errors                     0
Forced recaches                       0
Cache write errors                    0
Compilation failures                  7
Cache errors                          0
Non-cacheable compilations            0
Non-cacheable calls                 303
Non-compilation calls                 0
Unsupported compiler calls            0
Average cache write               0.021 s
Average compiler                  4.307 s
Average cache read hit            0.004 s
Failed distributed compilations       0

Non-cacheable reasons:
crate-type                          198
-                                    71
incremental                          34

Cache hits rate                    3.10 %
Cache hits rate (C/C++)           87.76 %
Cache hits rate (Rust)             1.48 %
Cache location                  Local disk: "/home/ci/.cache/sccache"
Use direct/preprocessor mode?   yes
Version (client)                0.8.2
Cache size                            2 GiB
Max cache size                        2 GiB"""


_WORKSPACE_TOML = """[workspace]
resolver = "2"
members = [
    "crates/quarry-core",
    "crates/quarry-store",
    "crates/quarry-ingest",
    "crates/quarry-query",
    "crates/quarry-cli",
    "crates/quarry-api",
    "crates/quarry-proto",
    "crates/quarry-macros",
]

[workspace.package]
version = "0.14.0"
edition = "2021"
rust-version = "1.74"
license = "Apache-2.0"
repository = "https://git.example.org/data/quarry"

[workspace.dependencies]
anyhow = "1.0"
arrow = { version = "53", default-features = false, features = ["ipc", "prettyprint"] }
axum = { version = "0.7", features = ["macros"] }
bytes = "1.9"
chrono = { version = "0.4", default-features = false, features = ["clock", "serde"] }
clap = { version = "4.5", features = ["derive", "env"] }
futures-util = "0.3"
parquet = { version = "53", default-features = false, features = ["arrow", "zstd", "async"] }
prost = "0.13"
quarry-macros = { path = "crates/quarry-macros", version = "0.9.2" }
reqwest = { version = "0.12", default-features = false, features = ["rustls-tls", "json"] }
serde = { version = "1.0", features = ["derive"] }
serde_json = "1.0"
sqlx = { version = "0.8", features = ["runtime-tokio", "postgres", "sqlite", "macros", "migrate", "chrono", "uuid"] }
thiserror = "2.0"
tokio = { version = "1.41", features = ["full"] }
tonic = "0.12"
tracing = "0.1"
tracing-subscriber = { version = "0.3", features = ["env-filter", "json"] }
uuid = { version = "1.11", features = ["v7", "serde"] }

[profile.dev]
debug = 1

[profile.dev.package."*"]
opt-level = 1

[profile.release]
lto = "thin"
codegen-units = 4
"""

_CI_YML = """name: ci
on:
  push:
    branches: [main, "release/**"]
  pull_request:

env:
  CARGO_TERM_COLOR: always
  CARGO_INCREMENTAL: "0"
  RUSTC_WRAPPER: sccache
  SCCACHE_DIR: /home/ci/.cache/sccache
  SCCACHE_CACHE_SIZE: 2G

jobs:
  lint:
    runs-on: [self-hosted, linux, x64, rust]
    steps:
      - uses: actions/checkout@v4
      - run: cargo fmt --all --check
      - run: cargo clippy --workspace --all-targets -- -D warnings

  test:
    runs-on: [self-hosted, linux, x64, rust]
    env:
      RUSTFLAGS: "--cfg tokio_unstable -C link-arg=-Wl,--compress-debug-sections=zlib --remap-path-prefix=${{ github.workspace }}=/src"
    steps:
      - uses: actions/checkout@v4
      - uses: actions/cache@v4
        with:
          path: /home/ci/.cache/sccache
          key: sccache-${{ runner.os }}-${{ hashFiles('Cargo.lock') }}
          restore-keys: sccache-${{ runner.os }}-
      - run: cargo build --workspace --all-targets --locked
      - run: cargo nextest run --workspace --profile ci
      - run: sccache --show-stats

  msrv:
    runs-on: [self-hosted, linux, x64, rust]
    steps:
      - uses: actions/checkout@v4
      - run: rustup toolchain install 1.74 --profile minimal
      - run: cargo +1.74 check --workspace --locked
"""


def _nextest(seed: int, tail: str) -> str:
    rng = random.Random(seed)
    crates = [
        "quarry-core",
        "quarry-store",
        "quarry-ingest",
        "quarry-query",
        "quarry-cli",
        "quarry-api",
        "quarry-proto",
        "quarry-macros",
    ]
    lines = ["    Starting 212 tests across 14 binaries (3 tests skipped)"]
    for i in range(212):
        lines.append(
            f"        PASS [{rng.uniform(0.001, 4.9):7.3f}s] {rng.choice(crates)} {rng.choice(['tests', 'store', 'parse', 'sink', 'plan', 'derive'])}::{rng.choice(['roundtrip', 'rejects', 'merges', 'streams', 'expands', 'orders'])}_{rng.choice(['empty', 'nested', 'nulls', 'large', 'unicode', 'generic'])}_{i}"
        )
    return "\n".join(lines) + "\n" + tail


_RUST_AUTHORS = ["ines.carvalho", "dev.patel", "ola.nordmann", "renovate[bot]", "k.ibrahim"]
_RUST_SUBJECTS = [
    "deps: update rust crate chrono to 0.4.{n}",
    "feat(ingest): parquet sink row groups",
    "fix(cli): --dry-run exit code",
    "quarry-macros: derive Schema for enums",
    "ci: nextest profile",
    "refactor(store): split pg and sqlite backends",
    "query: push down limit (#{n})",
    "docs: MSRV policy",
]

J4 = Session(
    "j4-rust-ci-build-time",
    [
        U(
            f"CI on quarry went from roughly 9 minutes to about 23 minutes in the last two weeks, no big code drops. Ines Carvalho is our release manager and cuts the 0.14 branch on Friday; she needs the pipeline back in shape before then. Workspace is {_RUST_DIR}."
        ),
        A(
            "Listing recent CI runs to see when it jumped.",
            Call(
                "shell",
                codex_shell("gh run list --workflow ci --limit 70", _RUST_DIR),
                codex_text(_gh_runs(1401), seconds=2.3),
            ),
        ),
        A(
            "It jumped about six days ago and has stayed there. Building with timings from a clean target dir and reading the sccache statistics the job printed.",
            Call(
                "shell",
                codex_shell(
                    "cargo clean && cargo build --workspace --all-targets --locked --timings 2>&1 | python3 tools/timings_table.py",
                    _RUST_DIR,
                ),
                codex_json(
                    _timings(
                        1402,
                        {
                            0.02: "quarry-macros v0.9.2 (proc-macro)            143.7s   131.2s   default,schema,sqlx"
                        },
                    ),
                    seconds=1142.6,
                ),
            ),
            Call(
                "shell",
                codex_shell(
                    "gh run view 12399871204 --log | grep -A40 'sccache --show-stats' | cut -f3-",
                    _RUST_DIR,
                ),
                codex_text(_sccache_stats(), seconds=3.0),
            ),
        ),
        A(
            "Two things stand out: quarry-macros alone takes minutes, and sccache hits almost nothing for Rust. Checking duplicate dependencies and the workspace manifest.",
            Call(
                "shell",
                codex_shell("cargo tree --workspace -d --edges normal,build", _RUST_DIR),
                codex_json(
                    _cargo_tree_dups(
                        1403,
                        {
                            0.55: "syn v1.0.109\n└── quarry-macros v0.9.2 (proc-macro) (/home/ci/src/quarry/crates/quarry-macros)\n    └── quarry-store v0.14.0 (/home/ci/src/quarry/crates/quarry-store)\n\nsyn v2.0.90\n├── clap_derive v4.5.18 (proc-macro)\n├── prost-derive v0.13.3 (proc-macro)\n├── sqlx-macros-core v0.8.2\n└── thiserror-impl v2.0.3 (proc-macro)"
                        },
                    ),
                    seconds=0.9,
                ),
            ),
            Call(
                "shell",
                codex_shell(
                    "cat Cargo.toml crates/quarry-macros/Cargo.toml .github/workflows/ci.yml",
                    _RUST_DIR,
                ),
                codex_text(
                    _WORKSPACE_TOML
                    + '\n[package]\nname = "quarry-macros"\nversion = "0.9.2"\nedition.workspace = true\nrust-version.workspace = true\n\n[lib]\nproc-macro = true\n\n[dependencies]\nproc-macro2 = "1"\nquote = "1"\nsyn = { version = "1", features = ["full", "extra-traits", "visit-mut"] }\nsqlx = { workspace = true }\n\n'
                    + _CI_YML,
                    seconds=0.1,
                ),
            ),
        ),
        A(
            "Git history of the manifests and the workflow, to tie it to a change.",
            Call(
                "shell",
                codex_shell(
                    "git log --format='%h %<(16)%an %ar  %s' -n 110 -- Cargo.toml crates/*/Cargo.toml .github/",
                    _RUST_DIR,
                ),
                codex_json(
                    _oneline_log(
                        1404,
                        110,
                        _RUST_AUTHORS,
                        _RUST_SUBJECTS,
                        {
                            0.12: "b84e21d07 dev.patel        6 days ago   quarry-macros: depend on sqlx for compile-time schema checks",
                            0.14: "0c5f9aa31 k.ibrahim        6 days ago   ci: enable tokio_unstable and path remapping in the test job",
                        },
                    ),
                    seconds=0.2,
                ),
            ),
        ),
        A(
            "Here is what happened six days ago. b84e21d07 made quarry-macros depend on sqlx, so the proc-macro now drags sqlx, tokio with every feature and a second copy of syn (1.0.109, with full and extra-traits) into the host build; that is the 143.7 s crate at the top of the timings. The same day 0c5f9aa31 gave only the test job its own RUSTFLAGS, and RUSTFLAGS are part of sccache's cache key, so the test job can no longer reuse anything the lint job or earlier runs compiled; the cache also holds only 2 GiB, smaller than one full build now. The regression is those two changes together, not the code."
        ),
        U(
            "Dev Patel wrote quarry-macros and still maintains it; he's fine with moving the sqlx check out. Constraints: don't change quarry-macros' public API, it's published and three teams derive from it. And MSRV stays at 1.74, customers build from source with Debian's rustc, so nothing newer."
        ),
        A(
            "Then the schema check moves behind a feature flag that CI enables only in one job, and the macro goes back to syn 2 without sqlx. For tokio, I'll put `default-features = false` on the workspace dependency and let each crate name the features it uses, instead of trimming it per crate, because Cargo's feature unification would otherwise turn `full` back on for every crate whenever one of them asks for it.",
            Call(
                "apply_patch",
                codex_patch(
                    "Cargo.toml",
                    'tokio = { version = "1.41", features = ["full"] }',
                    'tokio = { version = "1.41", default-features = false }',
                    "[workspace.dependencies]",
                ),
                codex_patched("Cargo.toml"),
            ),
            Call(
                "apply_patch",
                codex_patch(
                    "crates/quarry-macros/Cargo.toml",
                    'syn = { version = "1", features = ["full", "extra-traits", "visit-mut"] }\nsqlx = { workspace = true }',
                    'syn = { version = "2", features = ["full", "visit-mut"] }\nsqlx = { workspace = true, optional = true }\n\n[features]\ndefault = []\n# compile-time schema checks against a live database; CI enables this in one job only\nschema-check = ["dep:sqlx"]',
                    "[dependencies]",
                ),
                codex_patched("crates/quarry-macros/Cargo.toml"),
            ),
            Call(
                "apply_patch",
                codex_patch(
                    "crates/quarry-cli/Cargo.toml",
                    "tokio = { workspace = true }",
                    'tokio = { workspace = true, features = ["rt-multi-thread", "macros", "signal", "fs"] }',
                    "[dependencies]",
                ),
                codex_patched("crates/quarry-cli/Cargo.toml"),
            ),
        ),
        U("For linking, mold would be fastest, right? Go with whatever you think."),
        A(
            "I'd use lld rather than mold: mold isn't in the self-hosted runner image and the infra team has frozen that image until after the release, while lld ships with the rust toolchain as rust-lld. Setting it in .cargo/config.toml and giving every CI job the same RUSTFLAGS so they share one cache key.",
            Call(
                "apply_patch",
                {
                    "input": '*** Begin Patch\n*** Add File: .cargo/config.toml\n+[target.x86_64-unknown-linux-gnu]\n+linker = "clang"\n+rustflags = ["-C", "link-arg=-fuse-ld=lld", "--cfg", "tokio_unstable"]\n*** End Patch'
                },
                "Success. Updated the following files:\nA .cargo/config.toml",
            ),
            Call(
                "apply_patch",
                codex_patch(
                    ".github/workflows/ci.yml",
                    '    env:\n      RUSTFLAGS: "--cfg tokio_unstable -C link-arg=-Wl,--compress-debug-sections=zlib --remap-path-prefix=${{ github.workspace }}=/src"\n    steps:',
                    "    steps:",
                    "  test:",
                ),
                codex_patched(".github/workflows/ci.yml"),
            ),
        ),
        U(
            "The budget Ines gave for the whole pipeline is 12 minutes. Correction from her just now: 10 minutes, because the release train has two extra jobs."
        ),
        A(
            "Raising the sccache size too, since a full build no longer fits in 2G; setting SCCACHE_CACHE_SIZE to 4G and running the whole pipeline locally with act.",
            Call(
                "apply_patch",
                codex_patch(
                    ".github/workflows/ci.yml",
                    "  SCCACHE_CACHE_SIZE: 2G",
                    "  SCCACHE_CACHE_SIZE: 4G",
                    "env:",
                ),
                codex_patched(".github/workflows/ci.yml"),
            ),
            Call(
                "shell",
                codex_shell(
                    "act push -j test --bind 2>&1 | grep -E 'PASS|FAIL|Finished|Summary|Cache hits rate' | tail -n 240",
                    _RUST_DIR,
                ),
                codex_json(
                    _nextest(
                        1405,
                        "------------\n     Summary [  41.902s] 212 tests run: 212 passed, 3 skipped\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 6m 48s\nCache hits rate                   71.22 %\nCache hits rate (Rust)            70.91 %",
                    ),
                    seconds=531.0,
                ),
            ),
        ),
        A(
            "A cold run now finishes the build in 6m 48s and the warm cache hit rate is back above 70%. The cache directory ended at 3.6 GiB after two runs, which is close to the 4G limit."
        ),
        U(
            "Then give it room: Ines agreed to 6G for the sccache size on the runners, that's the final number. Also check the MSRV job still passes."
        ),
        A(
            "Setting 6G and running the MSRV check.",
            Call(
                "apply_patch",
                codex_patch(
                    ".github/workflows/ci.yml",
                    "  SCCACHE_CACHE_SIZE: 4G",
                    "  SCCACHE_CACHE_SIZE: 6G",
                    "env:",
                ),
                codex_patched(".github/workflows/ci.yml"),
            ),
            Call(
                "shell",
                codex_shell("cargo +1.74 check --workspace --locked 2>&1 | tail -n 60", _RUST_DIR),
                codex_text(
                    "\n".join(f"    Checking {n} v{v}" for n, v in _CRATES)
                    + "\n"
                    + "\n".join(
                        f"    Checking quarry-{c} v0.14.0 ({_RUST_DIR}/crates/quarry-{c})"
                        for c in [
                            "core",
                            "proto",
                            "macros",
                            "store",
                            "ingest",
                            "query",
                            "api",
                            "cli",
                        ]
                    )
                    + "\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 2m 11s",
                    seconds=131.4,
                ),
            ),
        ),
        A(
            "Done. The doubling came from quarry-macros pulling sqlx and syn 1 into every build (b84e21d07) plus a test-only RUSTFLAGS that split sccache's cache key (0c5f9aa31). The macro is back on syn 2 with sqlx behind the schema-check feature, tokio is default-features = false at the workspace level, linking uses lld via .cargo/config.toml, all jobs share one RUSTFLAGS and the cache is 6G. The build takes 6m 48s cold, inside Ines's 10 minutes, and it still checks on 1.74."
        ),
    ],
    [
        Fact("person", ("Ines Carvalho", "release manager"), "release manager"),
        Fact("person", ("Dev Patel", "maintains"), "wrote and maintains quarry-macros"),
        Fact("number", ("23 minutes",), "CI time now, said in conversation"),
        Fact("tool_output", ("143.7s",), "quarry-macros compile time in the timings"),
        Fact("tool_output", ("syn v1.0.109",), "duplicate syn in cargo tree"),
        Fact("tool_output", ("1.48 %",), "Rust cache hit rate in sccache stats"),
        Fact("conclusion", ("b84e21d07", "cache key"), "what caused the regression"),
        Fact("constraint", ("1.74", "Debian"), "MSRV stays, and why"),
        Fact("constraint", ("public API",), "quarry-macros public API must not change"),
        Fact("decision", ("default-features = false", "unification"), "workspace tokio and why"),
        Fact("decision", ("lld", "runner image"), "lld over mold and why"),
        Fact("number", ("10 minutes",), "pipeline budget, the corrected value"),
        Fact("number", ("6G",), "sccache size, the later value"),
        Fact("path", (".cargo/config.toml",), "linker config added"),
    ],
)


# -- j5: two accounts behind one visible username (Unicode normalization) -------------------------

_ACC_DIR = "/srv/accounts-svc"
_NAMES = [
    "jose",
    "zoe",
    "chloe",
    "noel",
    "andre",
    "rene",
    "ines",
    "joao",
    "bjorn",
    "francois",
    "muller",
    "lukas",
    "sofia",
    "marta",
    "kenji",
    "amelie",
]


def _app_log(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    events = [
        "login_ok",
        "login_ok",
        "login_ok",
        "token_refreshed",
        "login_failed",
        "signup_ok",
        "password_reset_sent",
        "mfa_challenge",
    ]
    lines = []
    for i in range(170):
        ev = rng.choice(events)
        rec = {
            "ts": f"2026-12-07T09:{i * 59 // 170:02d}:{rng.randint(0, 59):02d}.{rng.randint(100, 999)}Z",
            "level": "warning" if ev == "login_failed" else "info",
            "logger": "accounts.auth",
            "event": ev,
            "request_id": short_hash(rng, 16),
            "client": rng.choice(["ios/8.14.0", "android/8.14.1", "web/2026.12.1", "macos/3.2.0"]),
        }
        if ev == "login_failed":
            rec["reason"] = rng.choice(["bad_password", "bad_password", "no_such_user", "locked"])
            rec["username_hex"] = (rng.choice(_NAMES) + str(rng.randint(1, 99))).encode().hex()
        lines.append(json.dumps(rec))
    return bury(lines, planted)


_SIGNUP_PY = '''"""Sign-up endpoint: validates, stores, sends the welcome mail."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, status
from sqlalchemy import func, select

from accounts.db import session_scope
from accounts.mail import send_welcome
from accounts.models import Account
from accounts.passwords import hash_password
from accounts.schemas import SignupIn, SignupOut

router = APIRouter()

USERNAME_MIN = 3
USERNAME_MAX = 32
RESERVED = {"admin", "root", "support", "help", "billing", "security", "api", "www"}


@router.post("/v1/signup", status_code=status.HTTP_201_CREATED, response_model=SignupOut)
def signup(body: SignupIn) -> SignupOut:
    username = body.username.strip().lower()
    if not USERNAME_MIN <= len(username) <= USERNAME_MAX:
        raise HTTPException(422, "username length")
    if username in RESERVED:
        raise HTTPException(409, "username taken")
    with session_scope() as db:
        taken = db.scalar(select(func.count()).where(func.lower(Account.username) == username))
        if taken:
            raise HTTPException(409, "username taken")
        account = Account(username=username, email=body.email, password_hash=hash_password(body.password))
        db.add(account)
        db.flush()
        send_welcome(account)
        return SignupOut(id=account.id, username=account.username)
'''

_LOGIN_PY = '''"""Login: username + password, then MFA if enrolled."""

from __future__ import annotations

import unicodedata

from fastapi import APIRouter, HTTPException
from sqlalchemy import func, select

from accounts.db import session_scope
from accounts.models import Account
from accounts.passwords import verify_password
from accounts.schemas import LoginIn, LoginOut
from accounts.tokens import issue_tokens

router = APIRouter()


def _canonical(username: str) -> str:
    return unicodedata.normalize("NFKC", username).strip().casefold()


@router.post("/v1/login", response_model=LoginOut)
def login(body: LoginIn) -> LoginOut:
    username = _canonical(body.username)
    with session_scope() as db:
        account = db.scalars(select(Account).where(func.lower(Account.username) == username)).one_or_none()
        if account is None or not verify_password(body.password, account.password_hash):
            raise HTTPException(401, "invalid credentials")
        return issue_tokens(account)
'''


def _dupes(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        " canonical        | ids                        | created_at (first / last)                          | forms",
        "------------------+----------------------------+----------------------------------------------------+-------",
    ]
    for _ in range(120):
        base = rng.choice(_NAMES) + rng.choice(["", ".", "_"]) + str(rng.randint(1, 999))
        a, b = rng.randint(10_000, 4_900_000), rng.randint(4_900_001, 5_300_000)
        lines.append(
            f" {base:<16} | {{{a},{b}}}{'':<{26 - len(str(a)) - len(str(b)) - 3}} | 2{rng.randint(22, 26)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} / 2026-1{rng.randint(0, 2)}-0{rng.randint(1, 9)}{'':<25} | NFC,NFD"
        )
    lines.append("...")
    lines.append("(1286 rows)")
    return "\n".join(lines)


def _pytest_j5(seed: int, failed: bool) -> str:
    rng = random.Random(seed)
    files = [
        "tests/test_signup.py",
        "tests/test_login.py",
        "tests/test_tokens.py",
        "tests/test_reset.py",
        "tests/test_mfa.py",
        "tests/test_normalize.py",
    ]
    out = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.12.7, pytest-8.3.3, pluggy-1.5.0",
        f"rootdir: {_ACC_DIR}",
        "configfile: pyproject.toml",
        "plugins: anyio-4.6.2, cov-6.0.0, xdist-3.6.1",
        "collected 231 items",
        "",
    ]
    for f in files:
        n = rng.randint(28, 48)
        marks = "".join("." for _ in range(n))
        if failed and f == "tests/test_signup.py":
            marks = marks[:17] + "F" + marks[18:]
        out.append(f"{f} {marks}{'':<{60 - n}}[{rng.randint(10, 100):3d}%]")
    if failed:
        out += [
            "",
            "=================================== FAILURES ===================================",
            "__________________ test_signup_rejects_equivalent_unicode _______________________",
            "",
            "client = <starlette.testclient.TestClient object at 0x7f3a2c1e5d90>",
            "",
            "    def test_signup_rejects_equivalent_unicode(client):",
            '        client.post("/v1/signup", json=_body("jos\\u00e9"))',
            '>       r = client.post("/v1/signup", json=_body("jose\\u0301"))',
            "E       assert 201 == 409",
            "E        +  where 201 = <Response [201 Created]>.status_code",
            "",
            "tests/test_signup.py:88: AssertionError",
            "----------------------------- Captured log call --------------------------------",
        ]
        out += [
            f"INFO     accounts.auth:signup.py:{rng.randint(20, 40)} signup_ok username={rng.choice(_NAMES)}"
            for _ in range(30)
        ]
        out += [
            "=========================== short test summary info ============================",
            "FAILED tests/test_signup.py::test_signup_rejects_equivalent_unicode - assert 201 == 409",
            "======================== 1 failed, 230 passed in 9.84s =========================",
        ]
    else:
        out += [
            "",
            "============================= 231 passed in 9.61s ==============================",
        ]
    return "\n".join(out)


def _alembic_sql(seed: int) -> str:
    rng = random.Random(seed)
    out = [
        "INFO  [alembic.runtime.migration] Context impl PostgresqlImpl.",
        "INFO  [alembic.runtime.migration] Generating static SQL",
        "INFO  [alembic.runtime.migration] Will assume transactional DDL.",
        "BEGIN;",
        "",
        "-- Running upgrade 0096_mfa_recovery_codes -> 0097_username_nfc",
        "",
    ]
    out.append("ALTER TABLE accounts ADD COLUMN merged_into BIGINT REFERENCES accounts (id);")
    out.append("ALTER TABLE accounts ADD COLUMN username_canonical TEXT;")
    for i in range(0, 130):
        lo = i * 500
        out.append(
            f"UPDATE accounts SET username_canonical = normalize(lower(username), NFC) WHERE id > {lo + rng.randint(0, 3)} AND id <= {lo + 500} AND username_canonical IS NULL;"
        )
        if i % 10 == 9:
            out.append(f"SELECT pg_sleep(0.{rng.randint(1, 3)});")
    out += [
        "...",
        "CREATE UNIQUE INDEX CONCURRENTLY accounts_username_canonical_key ON accounts (username_canonical) WHERE merged_into IS NULL;",
        "",
        "UPDATE alembic_version SET version_num='0097_username_nfc' WHERE alembic_version.version_num = '0096_mfa_recovery_codes';",
        "",
        "COMMIT;",
    ]
    return "\n".join(out)


_LOWER_LINES = [
    "email = body.email.strip().lower()",
    'domain = email.rsplit("@", 1)[1].lower()',
    'key = f"rl:{ip}:{route}".lower()',
    "token = token.strip().lower()",
    'header = request.headers.get("x-client", "").lower()',
]

_ACC_AUTHORS = [
    "yuki.tanaka",
    "rafael.ortiz",
    "c.nakamura",
    "b.olsen",
    "dependabot[bot]",
    "amira.h",
]
_ACC_SUBJECTS = [
    "auth: casefold on login ({n})",
    "signup: reserved usernames",
    "deps: bump sqlalchemy to 2.0.{n}",
    "mfa: recovery codes",
    "reset: rate limit per ip",
    "schemas: email validation with idna",
    "tokens: rotate refresh on use",
    "login: NFKC normalize input (#{n})",
]

J5 = Session(
    "j5-unicode-usernames",
    [
        U(
            f"Support has had 57 tickets since Monday from people with accented names: they can't log in, and some of them now have two accounts that both show as the same name. Yuki Tanaka leads support and has the list of affected users. Code's in {_ACC_DIR}."
        ),
        A(
            "Reading the sign-up and login handlers side by side, and the auth log for failed logins.",
            Call("Read", {"file_path": f"{_ACC_DIR}/accounts/signup.py"}, numbered(_SIGNUP_PY)),
            Call("Read", {"file_path": f"{_ACC_DIR}/accounts/login.py"}, numbered(_LOGIN_PY)),
            Call(
                "Bash",
                {
                    "command": 'kubectl -n accounts logs deploy/accounts-svc --since=1h | grep \'"logger": "accounts.auth"\' | tail -n 170',
                    "description": "Recent auth events",
                },
                _app_log(
                    1501,
                    {
                        0.6: json.dumps(
                            {
                                "ts": "2026-12-07T09:36:12.514Z",
                                "level": "warning",
                                "logger": "accounts.auth",
                                "event": "login_failed",
                                "reason": "no_such_user",
                                "request_id": "7c1e99b04a2d53f0",
                                "client": "macos/3.2.0",
                                "username_hex": "6a6f7365cc81",
                            }
                        )
                    },
                ),
            ),
        ),
        A(
            "Checking what those bytes are and how each form behaves under the normalizations the two handlers use.",
            Call(
                "Bash",
                {
                    "command": "python3 -c \"import unicodedata as u; s=bytes.fromhex('6a6f7365cc81').decode(); print(repr(s), len(s)); [print(f, repr(u.normalize(f, s)), len(u.normalize(f, s)), u.normalize(f, s).encode().hex()) for f in ('NFC','NFD','NFKC','NFKD')]; print([u.name(c) for c in s])\"",
                    "description": "Decode the failing username",
                },
                "'josé' 5\nNFC 'josé' 4 6a6f73c3a9\nNFD 'josé' 5 6a6f7365cc81\nNFKC 'josé' 4 6a6f73c3a9\nNFKD 'josé' 5 6a6f7365cc81\n['LATIN SMALL LETTER J', 'LATIN SMALL LETTER O', 'LATIN SMALL LETTER S', 'LATIN SMALL LETTER E', 'COMBINING ACUTE ACCENT']",
            ),
            Call(
                "Grep",
                {
                    "pattern": "normalize|casefold|lower\\(",
                    "path": f"{_ACC_DIR}/accounts",
                    "output_mode": "content",
                    "-n": True,
                },
                "\n".join(
                    [
                        f'{_ACC_DIR}/accounts/login.py:19:    return unicodedata.normalize("NFKC", username).strip().casefold()',
                        f"{_ACC_DIR}/accounts/login.py:25:        account = db.scalars(select(Account).where(func.lower(Account.username) == username)).one_or_none()",
                        f"{_ACC_DIR}/accounts/signup.py:24:    username = body.username.strip().lower()",
                        f"{_ACC_DIR}/accounts/signup.py:30:        taken = db.scalar(select(func.count()).where(func.lower(Account.username) == username))",
                    ]
                    + [
                        f"{_ACC_DIR}/accounts/{m}.py:{random.Random(i).randint(10, 200)}:    {random.Random(i * 3).choice(_LOWER_LINES)}"
                        for i, m in enumerate(
                            [
                                "reset",
                                "mail",
                                "ratelimit",
                                "tokens",
                                "mfa",
                                "schemas",
                                "admin",
                                "export",
                            ]
                            * 4
                        )
                    ]
                ),
            ),
        ),
        A(
            "That's the bug. Sign-up only lowercases what the client sends, while login runs NFKC on the input first. The macOS client sends decomposed text (e + combining accent, the NFD form), so those accounts are stored decomposed; at login the input is composed by NFKC and no longer equals the stored bytes, so the lookup finds nobody. The user then signs up again, the uniqueness check compares raw bytes too, and a second account with the same visible name is created."
        ),
        A(
            "Sizing it: accounts whose usernames collide once both sides are normalized.",
            Call(
                "Bash",
                {
                    "command": "psql \"$ACCOUNTS_RO_DSN\" -c \"SELECT normalize(lower(username), NFC) AS canonical, array_agg(id ORDER BY id) AS ids, min(created_at) || ' / ' || max(created_at) AS \\\"created_at (first / last)\\\", string_agg(DISTINCT CASE WHEN username IS NFC NORMALIZED THEN 'NFC' ELSE 'NFD' END, ',') AS forms FROM accounts GROUP BY 1 HAVING count(*) > 1 ORDER BY 1\"",
                    "description": "Usernames that collide after normalization",
                },
                _dupes(1502),
            ),
        ),
        U(
            "Rafael Ortiz is the DBA for the accounts cluster and has to sign off on the backfill. His conditions: we never hard-delete an account, duplicates get soft-merged by pointing merged_into at the survivor. And the backfill updates at most 500 rows per batch, anything bigger makes the replicas lag."
        ),
        A(
            "For the canonical form I'd store NFC plus casefold, not NFKC. NFKC also folds compatibility characters: full-width letters, ligatures like ﬁ, superscripts. Some existing users have names that differ only in those, so NFKC would merge accounts that really are different people, while NFC only unifies the composed and decomposed spellings of the same text. Writing one normalize module that both handlers use.",
            Call(
                "Write",
                {
                    "file_path": f"{_ACC_DIR}/accounts/normalize.py",
                    "content": '"""One canonical form for usernames, used by sign-up, login and the uniqueness index."""\n\nfrom __future__ import annotations\n\nimport unicodedata\n\n\ndef canonical_username(raw: str) -> str:\n    """NFC, then casefold, then NFC again (casefold can produce decomposed text)."""\n    text = unicodedata.normalize("NFC", raw.strip())\n    return unicodedata.normalize("NFC", text.casefold())\n',
                },
                f"File created successfully at: {_ACC_DIR}/accounts/normalize.py",
            ),
            Call(
                "MultiEdit",
                {
                    "file_path": f"{_ACC_DIR}/accounts/signup.py",
                    "edits": [
                        {
                            "old_string": "from accounts.models import Account",
                            "new_string": "from accounts.models import Account\nfrom accounts.normalize import canonical_username",
                        },
                        {
                            "old_string": "    username = body.username.strip().lower()",
                            "new_string": "    username = canonical_username(body.username)",
                        },
                        {
                            "old_string": "where(func.lower(Account.username) == username))",
                            "new_string": "where(Account.username_canonical == username, Account.merged_into.is_(None)))",
                        },
                    ],
                },
                f'Applied 3 edits to {_ACC_DIR}/accounts/signup.py:\n1. Replaced "from accounts.models import Account" with "from accounts.models import Account\\nfrom accounts.normal..."\n2. Replaced "    username = body.username.strip().lower()" with "    username = canonical_username(body.username)"\n3. Replaced "where(func.lower(Account.username) == username))" with "where(Account.username_canonical == username, Account..."',
            ),
            Call(
                "Edit",
                {
                    "file_path": f"{_ACC_DIR}/accounts/login.py",
                    "old_string": "    username = _canonical(body.username)",
                    "new_string": "    username = canonical_username(body.username)",
                },
                edited(
                    f"{_ACC_DIR}/accounts/login.py",
                    '@router.post("/v1/login", response_model=LoginOut)\ndef login(body: LoginIn) -> LoginOut:\n    username = canonical_username(body.username)',
                    22,
                ),
            ),
        ),
        A(
            "Running the test suite with a new case for the two spellings of josé.",
            Call(
                "Bash",
                {
                    "command": f"cd {_ACC_DIR} && python -m pytest -q -p no:randomly",
                    "description": "Run the tests",
                },
                _pytest_j5(1503, True),
                True,
            ),
        ),
        A(
            "The test still gets 201: the model's username_canonical column doesn't exist yet in the test database, so the query falls back through the old fixture. Adding the column to the model and the migration.",
            Call(
                "Edit",
                {
                    "file_path": f"{_ACC_DIR}/accounts/models.py",
                    "old_string": "    username: Mapped[str] = mapped_column(String(64))",
                    "new_string": '    username: Mapped[str] = mapped_column(String(64))\n    username_canonical: Mapped[str | None] = mapped_column(Text, index=False)\n    merged_into: Mapped[int | None] = mapped_column(ForeignKey("accounts.id"))',
                },
                edited(
                    f"{_ACC_DIR}/accounts/models.py",
                    'class Account(Base):\n    __tablename__ = "accounts"\n    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)\n    username: Mapped[str] = mapped_column(String(64))\n    username_canonical: Mapped[str | None] = mapped_column(Text, index=False)\n    merged_into: Mapped[int | None] = mapped_column(ForeignKey("accounts.id"))',
                    14,
                ),
            ),
            Call(
                "Write",
                {
                    "file_path": f"{_ACC_DIR}/migrations/versions/0097_username_nfc.py",
                    "content": '"""username_canonical (NFC + casefold) and soft merges.\n\nRevision ID: 0097_username_nfc\nRevises: 0096_mfa_recovery_codes\n"""\n\nfrom alembic import op\nimport sqlalchemy as sa\n\nrevision = "0097_username_nfc"\ndown_revision = "0096_mfa_recovery_codes"\nBATCH = 500  # DBA limit: larger batches make the replicas lag\n\n\ndef upgrade() -> None:\n    op.add_column("accounts", sa.Column("merged_into", sa.BigInteger, sa.ForeignKey("accounts.id")))\n    op.add_column("accounts", sa.Column("username_canonical", sa.Text))\n    # backfill runs from scripts/backfill_canonical.py in batches of BATCH; the index comes after\n\n\ndef downgrade() -> None:\n    op.drop_column("accounts", "username_canonical")\n    op.drop_column("accounts", "merged_into")\n',
                },
                f"File created successfully at: {_ACC_DIR}/migrations/versions/0097_username_nfc.py",
            ),
            Call(
                "Bash",
                {
                    "command": f"cd {_ACC_DIR} && alembic upgrade head && python -m pytest -q -p no:randomly",
                    "description": "Migrate the test DB, rerun tests",
                },
                "INFO  [alembic.runtime.migration] Running upgrade 0096_mfa_recovery_codes -> 0097_username_nfc, username_canonical (NFC + casefold) and soft merges.\n"
                + _pytest_j5(1504, False),
            ),
        ),
        U("When two accounts collide, which one survives?"),
        A(
            "The older account, the lower id. It's the one the person registered first, and it carries their billing history and past orders; the newer twin was created only because login failed, so it usually has nothing but a profile. The newer one gets merged_into pointing at the survivor, its sessions are revoked and its email is moved over only if the survivor has none."
        ),
        A(
            "Rendering the migration's SQL and the batch plan for Rafael to review, plus the repo history around the login change.",
            Call(
                "Bash",
                {
                    "command": f"cd {_ACC_DIR} && alembic upgrade 0096_mfa_recovery_codes:0097_username_nfc --sql && python scripts/backfill_canonical.py --plan --batch 500 | head -n 140",
                    "description": "Offline SQL for review",
                },
                _alembic_sql(1505),
            ),
            Call(
                "Bash",
                {
                    "command": f"cd {_ACC_DIR} && git log --format='%h %<(16)%an %ar  %s' -n 120",
                    "description": "Recent commits",
                },
                _oneline_log(
                    1506,
                    120,
                    _ACC_AUTHORS,
                    _ACC_SUBJECTS,
                    {
                        0.35: "d4c81f2e0 c.nakamura       11 days ago  login: NFKC-normalize the username before lookup (sign-up unchanged)"
                    },
                ),
            ),
        ),
        U(
            "Rafael wants the backfill at 04:15 UTC tomorrow. No wait, he just said the nightly pg_dump runs until about five, so 05:45 UTC."
        ),
        A(
            "Scheduled for 05:45 UTC. Current state: sign-up and login both go through accounts/normalize.py (NFC + casefold); migrations/versions/0097_username_nfc.py adds username_canonical and merged_into; the backfill runs in 500-row batches, then the unique index on the canonical name is built concurrently; the 1286 colliding groups are soft-merged into their older account. d4c81f2e0 from 11 days ago is where the two handlers diverged."
        ),
    ],
    [
        Fact("person", ("Yuki Tanaka", "support"), "leads support"),
        Fact("person", ("Rafael Ortiz", "DBA"), "DBA who signs off the backfill"),
        Fact("number", ("57 tickets",), "ticket count, said in conversation"),
        Fact("tool_output", ("6a6f7365cc81",), "failing username's bytes in the auth log"),
        Fact("tool_output", ("1286 rows",), "colliding groups in the psql output"),
        Fact("tool_output", ("test_signup_rejects_equivalent_unicode",), "failing test"),
        Fact("conclusion", ("decomposed", "NFKC"), "why logins fail and twins appear"),
        Fact("constraint", ("hard-delete", "merged_into"), "soft merges only"),
        Fact("constraint", ("500 rows", "replicas lag"), "batch limit and why"),
        Fact("decision", ("NFC", "full-width"), "NFC over NFKC and why"),
        Fact("decision", ("older account", "billing history"), "which twin survives and why"),
        Fact("number", ("05:45 UTC",), "backfill time, the corrected value"),
        Fact("path", ("accounts/normalize.py",), "normalize module written"),
        Fact("path", ("migrations/versions/0097_username_nfc.py",), "migration written"),
    ],
)

SESSIONS = [J1, J2, J3, J4, J5]
