# ruff: noqa: E501  (scripted session data: long tool outputs read better unwrapped)
"""Set I: held out (written before it was measured; only its totals are read).

Written without reading the summarizers, the ledger or the other held-out sets. Five domains no
other set uses: a TLS certificate that cert-manager failed to renew, a Rust async service that
hangs under load, a Bazel remote cache handing back stale outputs, a privacy erasure job that
leaves personal data behind and a video transcoding pipeline whose audio drifts. Each session is
long (24-35k tokens by the len/3 estimate): outputs of 50-300 lines (kubectl tables, controller
logs, thread dumps, clippy and test runs, aquery dumps, runner inventories, EXPLAIN plans, job
logs, ffprobe listings) with the planted value among many values of its shape, several files a
turn, Claude Code shapes (Bash, Read, Edit, MultiEdit, Write, Grep, Glob) and Codex shapes (shell
argv with both output envelopes, apply_patch). A value restated then corrected keeps only the
correction as the needle; a value later superseded keeps only the later one.
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


def _pipe_log(
    seed: int, count: int, authors: list[str], subjects: list[str], planted: dict[float, str]
) -> str:
    """`git log --format='%h|%an|%ar|%s'`: pipe-separated, relative dates."""
    rng = random.Random(seed)
    lines = []
    for i in range(count):
        ago = f"{1 + i * 9 // count} weeks ago" if i > 4 else f"{1 + i} days ago"
        subject = rng.choice(subjects).format(n=rng.randint(11, 4800))
        lines.append(f"{short_hash(rng)}|{rng.choice(authors)}|{ago}|{subject}")
    return bury(lines, planted)


def _multi_edited(path: str, count: int) -> str:
    return f"Applied {count} edits to {path}"


# -- i1: an expired TLS certificate ------------------------------------------------------------

_EDGE = "/home/ops/src/edge-platform"
_NAMESPACES = [
    "partners",
    "storefront",
    "checkout",
    "search",
    "media",
    "auth",
    "docs",
    "status",
    "admin",
    "grafana",
    "argocd",
    "payments",
    "catalog",
    "mail",
]
_CERT_STEMS = ["web", "api", "cdn", "ws", "grpc", "admin", "preview", "static", "hooks", "sso"]


def _certificates(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "NAMESPACE      NAME                           READY   SECRET                         AGE"
    ]
    for i in range(150):
        ns = rng.choice(_NAMESPACES)
        name = f"{rng.choice(_CERT_STEMS)}-{ns}-{i:03d}-tls"
        if i == 77:
            ns, name = "partners", "partners-api-tls"
        ready = "True" if i != 77 else "False"
        lines.append(f"{ns:<14} {name:<30} {ready:<7} {name:<30} {rng.randint(12, 690)}d")
    return "\n".join(lines)


def _expiry_sweep(seed: int) -> str:
    rng = random.Random(seed)
    months = ["Jan", "Feb", "Mar", "Apr", "Feb", "Jan", "Mar"]
    lines = []
    for i in range(110):
        host = f"{rng.choice(_CERT_STEMS)}.{rng.choice(_NAMESPACES)}{i}.kestrel.io"
        stamp = f"{rng.choice(months)} {rng.randint(1, 28):2d} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} 2027 GMT"
        lines.append(
            f"{host:<36} notAfter={stamp}  serial={short_hash(rng, 32).upper()}  issuer=R1{rng.randint(0, 1)}"
        )
    return bury(
        lines,
        {
            0.44: "api.partners.kestrel.io              notAfter=Dec  7 05:58:12 2026 GMT  serial=04B7E19D2C55AA3F0E6B1C9D7A2F4E81  issuer=R11"
        },
    )


def _cm_log(seed: int, count: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    msgs = [
        '"certificate does not require re-issuance, certificate is up to date and Ready" logger="cert-manager.controller.trigger"',
        '"re-queuing item due to optimistic locking on resource" logger="cert-manager.controller"',
        '"cert-manager/certificates-readiness: updating status" logger="cert-manager.controller"',
        '"found existing certificate request" logger="cert-manager.controller.requestmanager"',
        '"skipping renewal, not yet due" logger="cert-manager.controller.trigger"',
        '"Certificate issued successfully" logger="cert-manager.controller.issuing"',
    ]
    lines = []
    for _ in range(count):
        ns = rng.choice(_NAMESPACES)
        key = f"{ns}/{rng.choice(_CERT_STEMS)}-{ns}-{rng.randint(0, 149):03d}-tls"
        lines.append(
            f'I1207 0{rng.randint(4, 6)}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(100000, 999999)}       1 controller.go:{rng.choice([162, 241, 318, 96])}] {rng.choice(msgs)} key="{key}"'
        )
    return bury(lines, planted)


def _ingress_yaml() -> str:
    return """apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: partners-api
  namespace: partners
  labels:
    app.kubernetes.io/name: partners-api
    app.kubernetes.io/part-of: partner-gateway
    team: integrations
  annotations:
    cert-manager.io/cluster-issuer: letsencrypt-http01
    cert-manager.io/duration: 2160h
    kubernetes.io/ingress.class: nginx-edge
    nginx.ingress.kubernetes.io/ssl-redirect: "true"
    nginx.ingress.kubernetes.io/force-ssl-redirect: "true"
    nginx.ingress.kubernetes.io/backend-protocol: "HTTP"
    nginx.ingress.kubernetes.io/proxy-body-size: "8m"
    nginx.ingress.kubernetes.io/proxy-read-timeout: "45"
    nginx.ingress.kubernetes.io/proxy-send-timeout: "45"
    nginx.ingress.kubernetes.io/limit-rps: "300"
    nginx.ingress.kubernetes.io/limit-burst-multiplier: "3"
    nginx.ingress.kubernetes.io/enable-cors: "false"
    nginx.ingress.kubernetes.io/whitelist-source-range: "203.0.113.0/27,198.51.100.64/26,192.0.2.128/25"
    nginx.ingress.kubernetes.io/configuration-snippet: |
      more_set_headers "X-Partner-Gateway: edge";
      more_set_headers "Strict-Transport-Security: max-age=63072000; includeSubDomains";
    nginx.ingress.kubernetes.io/server-snippet: |
      # deny-dotfiles: never serve .git, .env or any other dot path from the edge
      location ~ /\\. {
        deny all;
        return 404;
      }
spec:
  ingressClassName: nginx-edge
  tls:
    - hosts:
        - api.partners.kestrel.io
      secretName: partners-api-tls
  rules:
    - host: api.partners.kestrel.io
      http:
        paths:
          - path: /v2/orders
            pathType: Prefix
            backend:
              service:
                name: partner-orders
                port:
                  number: 8080
          - path: /v2/inventory
            pathType: Prefix
            backend:
              service:
                name: partner-inventory
                port:
                  number: 8080
          - path: /v2/webhooks
            pathType: Prefix
            backend:
              service:
                name: partner-webhooks
                port:
                  number: 8443
          - path: /v1
            pathType: Prefix
            backend:
              service:
                name: partner-legacy
                port:
                  number: 8080
          - path: /healthz
            pathType: Exact
            backend:
              service:
                name: partner-orders
                port:
                  number: 8081
"""


def _challenges(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "NAMESPACE      NAME                                          STATE     DOMAIN                                  AGE"
    ]
    for i in range(90):
        ns = rng.choice(_NAMESPACES)
        name = f"{rng.choice(_CERT_STEMS)}-{ns}-{i:03d}-tls-{rng.randint(1, 9)}-{rng.randint(1000000000, 4294967295)}-{rng.randint(1, 4)}"
        lines.append(
            f"{ns:<14} {name:<45} valid     {rng.choice(_CERT_STEMS)}.{ns}{i}.kestrel.io{'':<6} {rng.randint(1, 59)}d"
        )
    return bury(
        lines,
        {
            0.5: "partners       partners-api-tls-7-2814459310-0                pending   api.partners.kestrel.io                 40s"
        },
    )


def _alert_rules(seed: int) -> str:
    rng = random.Random(seed)
    metrics = [
        "nginx_ingress_controller_requests",
        "container_memory_working_set_bytes",
        "kube_pod_container_status_restarts_total",
        "probe_success",
        "node_filesystem_avail_bytes",
        "kube_deployment_status_replicas_unavailable",
    ]
    out = ["groups:", "  - name: edge-platform", "    rules:"]
    for i in range(34):
        metric = rng.choice(metrics)
        out += [
            f"      - alert: Edge{metric.split('_')[0].title()}{i}",
            f"        expr: sum(rate({metric}[{rng.choice([5, 10, 15])}m])) by (namespace) > {rng.randint(2, 900)}",
            f"        for: {rng.choice([2, 5, 10, 15])}m",
            "        labels:",
            f"          severity: {rng.choice(['page', 'ticket', 'ticket'])}",
        ]
        if i == 19:
            out += [
                "      - alert: CertificateExpiringSoon",
                "        expr: (certmanager_certificate_expiration_timestamp_seconds - time()) < 14 * 86400",
                "        for: 1h",
                "        labels:",
                "          severity: ticket",
            ]
    return "\n".join(out)


I1 = Session(
    "i1-cert-expiry",
    [
        U(
            "Partners started getting TLS handshake failures on api.partners.kestrel.io a little after 06:00 UTC. Tomasz Wieczorek is the platform on-call this week, so cluster changes go through him. The edge config lives in ~/src/edge-platform. Can you find out why the cert didn't renew?"
        ),
        A(
            "Listing every Certificate in the cluster and sweeping the expiry dates served on the edge hosts.",
            Call(
                "Bash",
                {
                    "command": "kubectl get certificates -A --no-headers=false",
                    "description": "All cert-manager Certificates",
                },
                _certificates(1101),
            ),
            Call(
                "Bash",
                {
                    "command": f"cd {_EDGE} && for h in $(cat hosts.txt); do printf '%-36s ' $h; echo | openssl s_client -connect $h:443 -servername $h 2>/dev/null | openssl x509 -noout -enddate -serial -issuer | tr '\\n' ' ' | sed 's/issuer=.*CN = /issuer=/'; echo; done",
                    "description": "Expiry of the certificate each edge host serves",
                },
                _expiry_sweep(1102),
            ),
        ),
        A(
            "Only partners-api-tls is not Ready, and the certificate it serves ran out this morning. Pulling the cert-manager controller log from the last three hours.",
            Call(
                "Bash",
                {
                    "command": "kubectl -n cert-manager logs deploy/cert-manager --since=3h | tail -n 220",
                    "description": "cert-manager controller log",
                },
                _cm_log(
                    1103,
                    180,
                    {
                        0.61: 'E1207 05:41:09.552017       1 sync.go:190] "propagation check failed" err="wrong status code \'404\', expected \'200\'" logger="cert-manager.controller" resource_name="partners-api-tls-7-2814459310-0" resource_namespace="partners" resource_kind="Challenge" dnsName="api.partners.kestrel.io" type="HTTP-01"',
                        0.62: 'I1207 05:41:09.552190       1 controller.go:162] "re-queuing item due to error processing" err="wrong status code \'404\', expected \'200\'" logger="cert-manager.challenges" key="partners/partners-api-tls-7-2814459310-0"',
                    },
                ),
            ),
        ),
        A(
            "The HTTP-01 self-check gets a 404 from our own edge. Reading the ingress that serves the host and the history of the ingress folder together.",
            Call(
                "Read",
                {"file_path": f"{_EDGE}/deploy/ingress/partners-api.yaml"},
                numbered(_ingress_yaml()),
            ),
            Call(
                "Bash",
                {
                    "command": f"git -C {_EDGE} log --format='%h|%an|%ar|%s' -n 130 -- deploy/ingress",
                    "description": "History of the ingress manifests",
                },
                _pipe_log(
                    1104,
                    130,
                    ["k.osei", "t.wieczorek", "m.baptiste", "dependabot", "l.hu", "r.mandal"],
                    [
                        "ingress: raise limit-rps for storefront to {n}",
                        "ingress: add /v2 route for partner-inventory",
                        "chore: bump ingress-nginx chart to 4.1{n}.0",
                        "ingress: move grafana behind oauth2-proxy",
                        "ingress: HSTS max-age everywhere",
                        "Merge branch 'edge-{n}' into main",
                        "ingress: tighten proxy timeouts",
                    ],
                    {
                        0.37: "5e1c0a9|k.osei|5 weeks ago|ingress: deny-dotfiles server-snippet on partner hosts"
                    },
                ),
            ),
        ),
        A(
            "Found it. The partners ingress carries a server-snippet (deny-dotfiles) that answers 404 to any path containing '/.', and /.well-known/acme-challenge/ matches it, so every HTTP-01 challenge fails before Let's Encrypt even tries. It arrived in 5e1c0a9 five weeks ago; cert-manager began renewing 30 days before expiry and has been failing quietly since, until the old certificate lapsed at 05:58:12."
        ),
        U(
            "Keisha Osei wrote that snippet, she's our application security engineer, and it isn't going anywhere. And HTTP-01 would be dead anyway: the host has a whitelist-source-range for partner IPs only, the Let's Encrypt validators can't reach it. We were down 47 minutes before Tomasz flipped the partners to the backup host, by the way."
        ),
        A(
            "Then the fix is on the issuer side. I'm moving this certificate to a DNS-01 solver against Route53, because the source allowlist means no HTTP-01 validator can ever reach the host; DNS-01 never touches the edge. Looking at the existing issuers first.",
            Call(
                "Glob",
                {"pattern": "deploy/cert-manager/**/*.yaml", "path": _EDGE},
                "\n".join(
                    f"{_EDGE}/deploy/cert-manager/{p}"
                    for p in [
                        "kustomization.yaml",
                        "namespace.yaml",
                        "values-prod.yaml",
                        "clusterissuer-letsencrypt-http01.yaml",
                        "clusterissuer-letsencrypt-staging.yaml",
                        "certificates/partners-api.yaml",
                        "certificates/storefront-web.yaml",
                        "certificates/checkout-api.yaml",
                        "certificates/status-web.yaml",
                        "monitoring/servicemonitor.yaml",
                    ]
                ),
            ),
            Call(
                "Read",
                {"file_path": f"{_EDGE}/deploy/cert-manager/clusterissuer-letsencrypt-http01.yaml"},
                numbered(
                    "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata:\n  name: letsencrypt-http01\nspec:\n  acme:\n    server: https://acme-v02.api.letsencrypt.org/directory\n    email: platform@kestrel.io\n    privateKeySecretRef:\n      name: letsencrypt-account-key\n    solvers:\n      - http01:\n          ingress:\n            ingressClassName: nginx-edge\n"
                ),
            ),
            Call(
                "Read",
                {"file_path": f"{_EDGE}/deploy/cert-manager/certificates/partners-api.yaml"},
                numbered(
                    "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: partners-api-tls\n  namespace: partners\nspec:\n  secretName: partners-api-tls\n  duration: 2160h\n  renewBefore: 720h\n  privateKey:\n    algorithm: ECDSA\n    size: 256\n    rotationPolicy: Always\n  dnsNames:\n    - api.partners.kestrel.io\n  issuerRef:\n    kind: ClusterIssuer\n    name: letsencrypt-http01\n"
                ),
            ),
        ),
        U(
            "Two rules for the Route53 side. The IAM role cert-manager assumes may only touch the hosted zone Z0841AFK29QX3, nothing else in the account. And whatever you do, don't turn off ssl-redirect on that ingress, not even for a minute: their SDK refuses to follow redirects and the contract says HTTPS only."
        ),
        A(
            "Writing the DNS-01 ClusterIssuer and the IAM policy scoped to that one zone.",
            Call(
                "Write",
                {
                    "file_path": f"{_EDGE}/deploy/cert-manager/clusterissuer-letsencrypt-dns01.yaml",
                    "content": "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata:\n  name: letsencrypt-dns01\nspec:\n  acme:\n    server: https://acme-v02.api.letsencrypt.org/directory\n    email: platform@kestrel.io\n    privateKeySecretRef:\n      name: letsencrypt-account-key\n    solvers:\n      - selector:\n          dnsZones:\n            - partners.kestrel.io\n        dns01:\n          route53:\n            region: eu-central-1\n            hostedZoneID: Z0841AFK29QX3\n            role: arn:aws:iam::418022563981:role/cert-manager-dns01\n",
                },
                f"File created successfully at: {_EDGE}/deploy/cert-manager/clusterissuer-letsencrypt-dns01.yaml",
            ),
            Call(
                "Write",
                {
                    "file_path": f"{_EDGE}/infra/iam/cert-manager-dns01-policy.json",
                    "content": json.dumps(
                        {
                            "Version": "2012-10-17",
                            "Statement": [
                                {
                                    "Effect": "Allow",
                                    "Action": "route53:GetChange",
                                    "Resource": "arn:aws:route53:::change/*",
                                },
                                {
                                    "Effect": "Allow",
                                    "Action": [
                                        "route53:ChangeResourceRecordSets",
                                        "route53:ListResourceRecordSets",
                                    ],
                                    "Resource": "arn:aws:route53:::hostedzone/Z0841AFK29QX3",
                                },
                            ],
                        },
                        indent=2,
                    ),
                },
                f"File created successfully at: {_EDGE}/infra/iam/cert-manager-dns01-policy.json",
            ),
        ),
        U(
            "While you're in the Certificate: renewBefore down to 360h so it retries later and we don't burn the rate limit. No wait, scratch that, keep it at 720h, thirty days of retries is exactly what should have saved us if anyone had been alerted."
        ),
        A(
            "Leaving renewBefore at 720h and pointing the Certificate at the new issuer.",
            Call(
                "MultiEdit",
                {
                    "file_path": f"{_EDGE}/deploy/cert-manager/certificates/partners-api.yaml",
                    "edits": [
                        {
                            "old_string": "    name: letsencrypt-http01",
                            "new_string": "    name: letsencrypt-dns01",
                        },
                        {
                            "old_string": "  renewBefore: 720h",
                            "new_string": "  renewBefore: 720h  # thirty days of retries before expiry",
                        },
                    ],
                },
                _multi_edited(f"{_EDGE}/deploy/cert-manager/certificates/partners-api.yaml", 2),
            ),
            Call(
                "Edit",
                {
                    "file_path": f"{_EDGE}/deploy/ingress/partners-api.yaml",
                    "old_string": "    cert-manager.io/cluster-issuer: letsencrypt-http01",
                    "new_string": "    cert-manager.io/cluster-issuer: letsencrypt-dns01",
                },
                edited(
                    f"{_EDGE}/deploy/ingress/partners-api.yaml",
                    '  annotations:\n    cert-manager.io/cluster-issuer: letsencrypt-dns01\n    cert-manager.io/duration: 2160h\n    kubernetes.io/ingress.class: nginx-edge\n    nginx.ingress.kubernetes.io/ssl-redirect: "true"',
                    10,
                ),
            ),
        ),
        A(
            "Applying and watching the challenges.",
            Call(
                "Bash",
                {
                    "command": f"cd {_EDGE} && kubectl apply -k deploy/cert-manager && cmctl renew -n partners partners-api-tls && sleep 40 && kubectl get challenges -A",
                    "description": "Apply issuer, trigger renewal, list challenges",
                },
                "clusterissuer.cert-manager.io/letsencrypt-dns01 created\nclusterissuer.cert-manager.io/letsencrypt-http01 unchanged\nclusterissuer.cert-manager.io/letsencrypt-staging unchanged\ncertificate.cert-manager.io/partners-api-tls configured\nManually triggered issuance of Certificate partners/partners-api-tls\n"
                + _challenges(1105),
            ),
        ),
        A(
            "The new challenge is pending while the TXT record propagates. Checking again in a couple of minutes.",
            Call(
                "Bash",
                {
                    "command": "sleep 150; kubectl -n partners get certificate partners-api-tls -o wide && kubectl -n partners describe certificate partners-api-tls | tail -n 12",
                    "description": "Certificate status after renewal",
                },
                'NAME               READY   SECRET             ISSUER              STATUS                                          AGE\npartners-api-tls   True    partners-api-tls   letsencrypt-dns01   Certificate is up to date and has not expired   418d\nEvents:\n  Type    Reason     Age    From                                       Message\n  ----    ------     ----   ----                                       -------\n  Normal  Issuing    3m2s   cert-manager-certificates-trigger          Renewing certificate as renewal was manually triggered\n  Normal  Reused     3m2s   cert-manager-certificates-key-manager      Reusing private key stored in existing Secret resource "partners-api-tls"\n  Normal  Requested  3m1s   cert-manager-certificates-request-manager  Created new CertificateRequest resource "partners-api-tls-8"\n  Normal  Issuing    22s    cert-manager-certificates-issuing          The certificate has been successfully issued',
            ),
        ),
        U(
            "Good. Nobody noticed for thirty days, so add an alert: page when any certificate is within 14 days of expiry."
        ),
        A(
            "There is already a CertificateExpiringSoon rule in the alerts file; reading it.",
            Call(
                "Read",
                {"file_path": f"{_EDGE}/deploy/monitoring/rules/edge-alerts.yaml"},
                numbered(_alert_rules(1106)),
            ),
        ),
        U(
            "Tomasz pinged me: 14 days is too tight with the holiday freeze, make the threshold 21 days. And it should page, not open a ticket."
        ),
        A(
            "Setting the rule to 21 days at page severity.",
            Call(
                "Edit",
                {
                    "file_path": f"{_EDGE}/deploy/monitoring/rules/edge-alerts.yaml",
                    "old_string": "        expr: (certmanager_certificate_expiration_timestamp_seconds - time()) < 14 * 86400\n        for: 1h\n        labels:\n          severity: ticket",
                    "new_string": "        expr: (certmanager_certificate_expiration_timestamp_seconds - time()) < 21 * 86400\n        for: 1h\n        labels:\n          severity: page",
                },
                edited(
                    f"{_EDGE}/deploy/monitoring/rules/edge-alerts.yaml",
                    "      - alert: CertificateExpiringSoon\n        expr: (certmanager_certificate_expiration_timestamp_seconds - time()) < 21 * 86400\n        for: 1h\n        labels:\n          severity: page",
                    121,
                ),
            ),
            Call(
                "Bash",
                {
                    "command": f"cd {_EDGE} && promtool check rules deploy/monitoring/rules/edge-alerts.yaml && kubectl apply -k deploy/monitoring",
                    "description": "Validate and apply alert rules",
                },
                "Checking deploy/monitoring/rules/edge-alerts.yaml\n  SUCCESS: 35 rules found\n\nprometheusrule.monitoring.coreos.com/edge-alerts configured",
            ),
        ),
        A(
            "Done. partners-api-tls now renews through letsencrypt-dns01 (Route53, zone Z0841AFK29QX3 only) and is Ready with a fresh certificate; the ingress keeps deny-dotfiles and ssl-redirect untouched. CertificateExpiringSoon pages at 21 days. Tomasz can move the partners back from the backup host whenever he likes."
        ),
    ],
    [
        Fact("person", ("Tomasz", "on-call"), "platform on-call who approves cluster changes"),
        Fact("person", ("Keisha", "security"), "wrote deny-dotfiles, application security"),
        Fact("tool_output", ("05:58:12",), "when the served cert expired, mid-sweep"),
        Fact("tool_output", ("wrong status code '404'",), "challenge self-check error, mid-log"),
        Fact("tool_output", ("5e1c0a9",), "commit that added the snippet, mid-log"),
        Fact("conclusion", ("server-snippet", "acme-challenge"), "why renewal failed"),
        Fact("decision", ("DNS-01", "allowlist"), "solver switch and why"),
        Fact("constraint", ("Z0841AFK29QX3",), "IAM role scoped to one zone"),
        Fact("constraint", ("ssl-redirect",), "never turn off ssl-redirect"),
        Fact("number", ("720h",), "renewBefore, the corrected value"),
        Fact("number", ("47 minutes",), "outage length, said in conversation"),
        Fact("number", ("21 days",), "alert threshold, the later value"),
        Fact("path", ("clusterissuer-letsencrypt-dns01.yaml",), "new issuer written"),
        Fact("path", ("cert-manager-dns01-policy.json",), "IAM policy written"),
    ],
)


# -- i2: a Rust async service that hangs under load --------------------------------------------

_TILE = "/srv/src/tile-cache"

_SHARD_RS = """use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tracing::{debug, instrument};

use crate::origin::{Origin, OriginError};
use crate::tile::{TileKey, TileMeta};

const SHARDS: usize = 64;
const STALE_AFTER: Duration = Duration::from_secs(300);

#[derive(Clone)]
pub struct Entry {
    pub body: Bytes,
    pub meta: TileMeta,
    pub fetched_at: Instant,
}

pub struct Shard {
    entries: Mutex<HashMap<TileKey, Entry>>,
    origin: Arc<dyn Origin>,
    hits: std::sync::atomic::AtomicU64,
    misses: std::sync::atomic::AtomicU64,
}

pub struct ShardedCache {
    shards: Vec<Shard>,
}

impl ShardedCache {
    pub fn new(origin: Arc<dyn Origin>) -> Self {
        let shards = (0..SHARDS)
            .map(|_| Shard {
                entries: Mutex::new(HashMap::with_capacity(4096)),
                origin: origin.clone(),
                hits: Default::default(),
                misses: Default::default(),
            })
            .collect();
        Self { shards }
    }

    fn shard(&self, key: &TileKey) -> &Shard {
        &self.shards[key.hash64() as usize % SHARDS]
    }

    #[instrument(skip(self), fields(z = key.z, x = key.x, y = key.y))]
    pub async fn get(&self, key: TileKey) -> Result<Entry, OriginError> {
        self.shard(&key).get_or_fetch(key).await
    }

    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.entries.lock().unwrap().len()).sum()
    }

    pub fn stats(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.shards.iter().fold((0, 0), |(h, m), s| {
            (h + s.hits.load(Relaxed), m + s.misses.load(Relaxed))
        })
    }
}

impl Shard {
    fn fresh(&self, entry: &Entry) -> bool {
        entry.fetched_at.elapsed() < STALE_AFTER
    }

    fn record_hit(&self) {
        self.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn record_miss(&self) {
        self.misses.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn evict_stale(map: &mut HashMap<TileKey, Entry>) {
        if map.len() < 4096 {
            return;
        }
        map.retain(|_, e| e.fetched_at.elapsed() < STALE_AFTER * 2);
    }

    fn insert(map: &mut HashMap<TileKey, Entry>, key: TileKey, entry: Entry) {
        Self::evict_stale(map);
        map.insert(key, entry);
    }

    fn lookup(&self, key: &TileKey) -> Option<Entry> {
        let map = self.entries.lock().unwrap();
        map.get(key).filter(|e| self.fresh(e)).cloned()
    }

    fn debug_miss(&self, key: &TileKey) {
        debug!(?key, "tile cache miss");
    }

    /// Returns the cached tile or fetches it from the origin.
    ///
    /// The lock is taken once so that two requests for the same tile do not both go to the
    /// origin (they used to, and the origin rate-limited us).
    pub async fn get_or_fetch(&self, key: TileKey) -> Result<Entry, OriginError> {
        if let Some(entry) = self.lookup(&key) {
            self.record_hit();
            return Ok(entry);
        }
        self.record_miss();
        self.debug_miss(&key);
        let mut map = self.entries.lock().unwrap();
        if let Some(entry) = map.get(&key).filter(|e| self.fresh(e)) {
            return Ok(entry.clone());
        }
        let (body, meta) = self.origin.fetch(&key).await?;
        let entry = Entry { body, meta, fetched_at: Instant::now() };
        Self::insert(&mut map, key, entry.clone());
        Ok(entry)
    }
}
"""

_CARGO_TOML = """[package]
name = "tile-cache"
version = "0.14.2"
edition = "2021"
rust-version = "1.79"
publish = false

[dependencies]
anyhow = "1.0.86"
axum = { version = "0.7.5", features = ["http2", "macros"] }
bytes = "1.6.1"
clap = { version = "4.5.9", features = ["derive", "env"] }
futures = "0.3.30"
hyper = { version = "1.4.1", features = ["full"] }
metrics = "0.23.0"
metrics-exporter-prometheus = "0.15.3"
reqwest = { version = "0.12.5", default-features = false, features = ["rustls-tls", "http2", "gzip"] }
serde = { version = "1.0.204", features = ["derive"] }
serde_json = "1.0.120"
thiserror = "1.0.63"
tokio = { version = "1.38.1", features = ["rt-multi-thread", "macros", "signal", "time", "net"] }
tower = { version = "0.4.13", features = ["limit", "timeout", "load-shed"] }
tower-http = { version = "0.5.2", features = ["trace", "compression-gzip", "cors"] }
tracing = "0.1.40"
tracing-subscriber = { version = "0.3.18", features = ["env-filter", "json"] }
twox-hash = "1.6.3"

[dev-dependencies]
criterion = { version = "0.5.1", features = ["async_tokio"] }
tokio-test = "0.4.4"
wiremock = "0.6.1"

[profile.release]
lto = "thin"
codegen-units = 4
debug = 1
"""


def _thread_dump(seed: int) -> str:
    rng = random.Random(seed)
    idle = [
        "syscall () at ../sysdeps/unix/sysv/linux/x86_64/syscall.S:38",
        "std::sys::pal::unix::futex::futex_wait () at library/std/src/sys/pal/unix/futex.rs:62",
        "std::thread::park_timeout () at library/std/src/thread/mod.rs:1220",
        "tokio::runtime::scheduler::multi_thread::park::Inner::park_condvar () at src/runtime/scheduler/multi_thread/park.rs:184",
        "tokio::runtime::scheduler::multi_thread::worker::Context::park_timeout () at src/runtime/scheduler/multi_thread/worker.rs:752",
        "tokio::runtime::scheduler::multi_thread::worker::Context::run () at src/runtime/scheduler/multi_thread/worker.rs:548",
        "tokio::runtime::context::scoped::Scoped<T>::set () at src/runtime/context/scoped.rs:40",
        "tokio::runtime::scheduler::multi_thread::worker::run () at src/runtime/scheduler/multi_thread/worker.rs:486",
        "tokio::runtime::blocking::pool::Inner::run () at src/runtime/blocking/pool.rs:512",
        "std::sys::pal::unix::thread::Thread::new::thread_start () at library/std/src/sys/pal/unix/thread.rs:105",
        "start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:447",
        "clone3 () at ../sysdeps/unix/sysv/linux/x86_64/clone3.S:78",
    ]
    stuck = [
        "syscall () at ../sysdeps/unix/sysv/linux/x86_64/syscall.S:38",
        "std::sys::pal::unix::futex::futex_wait () at library/std/src/sys/pal/unix/futex.rs:62",
        "std::sys::sync::mutex::futex::Mutex::lock_contended () at library/std/src/sys/sync/mutex/futex.rs:62",
        "std::sync::mutex::Mutex<T>::lock () at library/std/src/sync/mutex.rs:317",
        "tile_cache::cache::shard::Shard::get_or_fetch::{{closure}} () at src/cache/shard.rs:118",
        "tile_cache::cache::shard::ShardedCache::get::{{closure}} () at src/cache/shard.rs:52",
        "tile_cache::http::tiles::serve_tile::{{closure}} () at src/http/tiles.rs:41",
        "<core::pin::Pin<P> as core::future::future::Future>::poll () at library/core/src/future/future.rs:123",
        "tokio::runtime::task::core::Core<T,S>::poll () at src/runtime/task/core.rs:331",
        "tokio::runtime::task::harness::Harness<T,S>::poll () at src/runtime/task/harness.rs:154",
        "tokio::runtime::scheduler::multi_thread::worker::Context::run_task () at src/runtime/scheduler/multi_thread/worker.rs:623",
        "tokio::runtime::scheduler::multi_thread::worker::Context::run () at src/runtime/scheduler/multi_thread/worker.rs:541",
        "tokio::runtime::scheduler::multi_thread::worker::run () at src/runtime/scheduler/multi_thread/worker.rs:486",
        "std::sys::pal::unix::thread::Thread::new::thread_start () at library/std/src/sys/pal/unix/thread.rs:105",
        "start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:447",
    ]
    out = []
    for t in range(26, 0, -1):
        lwp = 48190 + t
        name = "tile-cache" if t == 1 else ("tokio-runtime-w" if t < 18 else "tokio-blocking")
        out.append(f'\nThread {t} (Thread 0x7f{short_hash(rng, 10)} (LWP {lwp}) "{name}"):')
        frames = stuck if 3 <= t <= 10 else idle
        for i, frame in enumerate(frames):
            out.append(f"#{i:<2} 0x0000{short_hash(rng, 12)} in {frame}")
    return "\n".join(out)


def _clippy(seed: int) -> str:
    rng = random.Random(seed)
    lints = [
        (
            "clippy::needless_borrow",
            "this expression creates a reference which is immediately dereferenced by the compiler",
        ),
        ("clippy::redundant_clone", "redundant clone"),
        ("clippy::uninlined_format_args", "variables can be used directly in the `format!` string"),
        ("clippy::manual_let_else", "this could be rewritten as `let...else`"),
        ("clippy::map_unwrap_or", "called `map(<f>).unwrap_or(<a>)` on an `Option` value"),
        (
            "clippy::cast_possible_truncation",
            "casting `u64` to `usize` may truncate the value on targets with 32-bit wide pointers",
        ),
        ("clippy::doc_markdown", "item in documentation is missing backticks"),
    ]
    files = [
        "src/http/tiles.rs",
        "src/origin/s3.rs",
        "src/origin/http.rs",
        "src/metrics.rs",
        "src/config.rs",
        "src/tile.rs",
        "src/main.rs",
    ]
    out = ["    Checking tile-cache v0.14.2 (/srv/src/tile-cache)"]
    for i in range(58):
        lint, msg = rng.choice(lints)
        out += [
            f"warning: {msg}",
            f"  --> {rng.choice(files)}:{rng.randint(10, 300)}:{rng.randint(5, 40)}",
            "   |",
            f"   = help: for further information visit https://rust-lang.github.io/rust-clippy/master/index.html#{lint.split('::')[1]}",
            f"   = note: `-W {lint.replace('_', '-')}` implied by `-W clippy::pedantic`",
            "",
        ]
        if i == 31:
            out += [
                "warning: this `MutexGuard` is held across an await point",
                "   --> src/cache/shard.rs:118:13",
                "    |",
                "118 |         let mut map = self.entries.lock().unwrap();",
                "    |             ^^^^^^^",
                "    |",
                "    = help: consider using an async-aware `Mutex` type or ensuring the `MutexGuard` is dropped before calling await",
                "note: these are all the await points this lock is held through",
                "   --> src/cache/shard.rs:122:58",
                "    = help: for further information visit https://rust-lang.github.io/rust-clippy/master/index.html#await_holding_lock",
                "    = note: `#[warn(clippy::await_holding_lock)]` on by default",
                "",
            ]
    out.append(
        "warning: `tile-cache` (lib) generated 59 warnings (run `cargo clippy --fix --lib -p tile-cache` to apply 21 suggestions)"
    )
    out.append("    Finished `dev` profile [unoptimized + debuginfo] target(s) in 14.22s")
    return "\n".join(out)


def _wrk(seed: int, rate: int, p99: str | None, stalled: bool) -> str:
    rng = random.Random(seed)
    out = [
        "Running 2m test @ http://tile-cache.staging.svc:8080/tiles/14/{x}/{y}.pbf",
        "  16 threads and 512 connections",
        "  Thread calibration: mean lat.: 4.211ms, rate sampling interval: 10ms",
    ]
    out += [
        f"  Thread calibration: mean lat.: {rng.uniform(2, 9):.3f}ms, rate sampling interval: 10ms"
        for _ in range(15)
    ]
    out += [
        "  Thread Stats   Avg      Stdev     Max   +/- Stdev",
        "  Latency Distribution (HdrHistogram - Recorded Latency)",
    ]
    quantiles = [
        "50.000%",
        "75.000%",
        "90.000%",
        "99.000%",
        "99.900%",
        "99.990%",
        "99.999%",
        "100.000%",
    ]
    low = sorted(rng.uniform(1.1, 19.9) for _ in range(3))
    high = sorted(rng.uniform(24, 80) for _ in range(5))
    stall = sorted(rng.uniform(9, 60) for _ in range(8))
    for i, q in enumerate(quantiles):
        if stalled:
            value = f"{stall[i]:.2f}s"
        elif q == "99.000%" and p99:
            value = p99
        else:
            value = f"{(low + high)[i]:.2f}ms"
        out.append(f" {q:>8}  {value:>9}")
    out.append("  Detailed Percentile spectrum:")
    out.append("       Value   Percentile   TotalCount 1/(1-Percentile)")
    for i in range(70):
        out.append(
            f"      {rng.uniform(0.5, 30):7.3f}     {min(0.999, i / 70):.6f}      {rng.randint(1000, 900000):>7}      {1 / (1 - min(0.999, i / 70)):8.2f}"
        )
    if stalled:
        out += [
            f"  {rate * 120} requests in 2.00m, 41.30MB read",
            "  Socket errors: connect 0, read 0, write 0, timeout 28112",
            f"Requests/sec:   {rate * 0.4:.2f}",
        ]
    else:
        out += [
            f"  {rate * 120} requests in 2.00m, 2.81GB read",
            f"Requests/sec:   {rate - 0.37:.2f}",
            "Transfer/sec:     23.91MB",
        ]
    return "\n".join(out)


def _cargo_test(seed: int, planted: dict[float, str], tail: str) -> str:
    rng = random.Random(seed)
    mods = [
        "tile::tests",
        "origin::s3::tests",
        "origin::http::tests",
        "http::tiles::tests",
        "config::tests",
        "cache::shard::tests",
    ]
    verbs = ["parses", "rejects", "caches", "expires", "serves", "retries", "encodes"]
    objs = [
        "zoom_out_of_range",
        "negative_x",
        "gzip_body",
        "stale_entry",
        "etag",
        "missing_tile",
        "huge_tile",
    ]
    lines = [
        "    Finished `test` profile [unoptimized + debuginfo] target(s) in 38.61s",
        "     Running unittests src/lib.rs (target/debug/deps/tile_cache-5c1f0e2b9a7d3e44)",
        "",
        "running 164 tests",
    ]
    for i in range(164):
        lines.append(f"test {rng.choice(mods)}::{rng.choice(verbs)}_{rng.choice(objs)}_{i} ... ok")
    return bury(lines, planted) + "\n" + tail


I2 = Session(
    "i2-rust-hang",
    [
        U(
            "tile-cache locks up under load. Roughly 90 seconds into a 3000 rps run every request stalls and CPU drops to nothing; restarting the pod fixes it until the next spike. Priyanka Raman is the tech lead for tile-cache and signs off on anything in the cache layer. Keep in mind the p99 has to stay under 35 ms at peak, that's what we promised the maps app. Code is in /srv/src/tile-cache."
        ),
        A(
            "Reading the manifest and the cache shard together.",
            Call(
                "shell",
                codex_shell("cat Cargo.toml && cat -n src/cache/shard.rs", _TILE),
                codex_text(_CARGO_TOML + "\n" + numbered(_SHARD_RS), seconds=0.1),
            ),
        ),
        A(
            "Reproducing on staging with wrk2 at 3000 rps, then taking a thread dump of the stuck process.",
            Call(
                "shell",
                codex_shell(
                    "wrk2 -t16 -c512 -d2m -R3000 --latency -s scripts/tiles.lua http://tile-cache.staging.svc:8080",
                    _TILE,
                ),
                codex_json(_wrk(1201, 3000, None, True), seconds=121.8),
            ),
            Call(
                "shell",
                codex_shell(
                    "kubectl -n tiles exec deploy/tile-cache -c app -- gdb -p 1 -batch -ex 'thread apply all bt' 2>/dev/null",
                    _TILE,
                ),
                codex_json(_thread_dump(1202), seconds=6.3),
            ),
        ),
        A(
            "Eight workers are parked in Mutex::lock at the same line of get_or_fetch. Running clippy to confirm what holds that lock.",
            Call(
                "shell",
                codex_shell("cargo clippy --all-targets -- -W clippy::pedantic 2>&1", _TILE),
                codex_text(_clippy(1203), seconds=14.9),
            ),
        ),
        A(
            "That is the hang. get_or_fetch takes the shard's std::sync::Mutex and keeps the MutexGuard alive across the origin fetch `.await`. When the origin slows down, the task holding the guard yields, and every other worker that hashes to that shard blocks its whole OS thread on lock(). Once all worker threads are blocked there is no thread left to poll the task that owns the guard, so the runtime deadlocks and CPU goes to zero. The comment above the function explains why it was written that way: to stop two requests for the same tile from both reaching the origin."
        ),
        U("Oskar on the maps side asked if we can just swap in tokio's Mutex. Is that the fix?"),
        A(
            "It would stop the deadlock but it would serialise every miss on a shard behind one slow origin call, so tail latency would blow through the SLO. I'm going with moka's future::Cache and its get_with, because that gives single-flight loading per key: concurrent misses on the same tile wait for one origin fetch, misses on other tiles proceed, and nothing is held across an await by our code. It also replaces the hand-written stale eviction."
        ),
        U(
            "Fine by Priyanka. One hard rule while you're in there: never call block_on anywhere in the request path. The last time someone did that to bridge sync code it took prod down for an afternoon."
        ),
        A(
            "Understood, nothing blocking. First a test that reproduces the stall, so the fix has something to pass.",
            Call(
                "apply_patch",
                {
                    "input": '*** Begin Patch\n*** Add File: tests/miss_storm.rs\n+use std::sync::Arc;\n+use std::time::Duration;\n+\n+use tile_cache::cache::shard::ShardedCache;\n+use tile_cache::origin::testing::SlowOrigin;\n+use tile_cache::tile::TileKey;\n+\n+/// Many concurrent misses on one shard while the origin is slow must all complete.\n+#[tokio::test(flavor = "multi_thread", worker_threads = 4)]\n+async fn concurrent_miss_storm_completes() {\n+    let origin = Arc::new(SlowOrigin::new(Duration::from_millis(250)));\n+    let cache = Arc::new(ShardedCache::new(origin.clone()));\n+    let tasks: Vec<_> = (0..4000)\n+        .map(|i| {\n+            let cache = cache.clone();\n+            tokio::spawn(async move { cache.get(TileKey::new(14, i % 8, 0)).await })\n+        })\n+        .collect();\n+    let all = futures::future::join_all(tasks);\n+    let done = tokio::time::timeout(Duration::from_secs(10), all).await;\n+    assert!(done.is_ok(), "miss storm did not finish in 10s");\n+    assert_eq!(origin.calls(), 8, "one origin fetch per distinct tile");\n+}\n*** End Patch'
                },
                "Success. Updated the following files:\nA tests/miss_storm.rs",
            ),
            Call(
                "shell",
                codex_shell("cargo test --test miss_storm 2>&1 | tail -n 30", _TILE),
                codex_text(
                    "   Compiling tile-cache v0.14.2 (/srv/src/tile-cache)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 22.40s\n     Running tests/miss_storm.rs (target/debug/deps/miss_storm-0b6ad1e8e3b0c7f2)\n\nrunning 1 test\ntest concurrent_miss_storm_completes has been running for over 60 seconds\n",
                    code=124,
                    seconds=600.0,
                ),
            ),
        ),
        U(
            "Size the cache at 200000 entries. Correction, 150000: the pods only get 2 GiB and the z14 tiles average around 9 KB."
        ),
        A(
            "Adding moka and rewriting the shard around it with max_capacity 150000.",
            Call(
                "apply_patch",
                codex_patch(
                    "Cargo.toml",
                    'metrics = "0.23.0"',
                    'metrics = "0.23.0"\nmoka = { version = "0.12.8", features = ["future"] }',
                    "[dependencies]",
                ),
                codex_patched("Cargo.toml"),
            ),
            Call(
                "apply_patch",
                codex_patch(
                    "src/cache/shard.rs",
                    "    pub async fn get_or_fetch(&self, key: TileKey) -> Result<Entry, OriginError> {\n        if let Some(entry) = self.lookup(&key) {\n            self.record_hit();\n            return Ok(entry);\n        }\n        self.record_miss();\n        self.debug_miss(&key);\n        let mut map = self.entries.lock().unwrap();\n        if let Some(entry) = map.get(&key).filter(|e| self.fresh(e)) {\n            return Ok(entry.clone());\n        }\n        let (body, meta) = self.origin.fetch(&key).await?;\n        let entry = Entry { body, meta, fetched_at: Instant::now() };\n        Self::insert(&mut map, key, entry.clone());\n        Ok(entry)\n    }",
                    "    pub async fn get_or_fetch(&self, key: TileKey) -> Result<Entry, Arc<OriginError>> {\n        let origin = self.origin.clone();\n        // try_get_with runs one fetch per key; concurrent callers for that key await it.\n        self.entries\n            .try_get_with(key.clone(), async move {\n                let (body, meta) = origin.fetch(&key).await?;\n                Ok(Entry { body, meta, fetched_at: Instant::now() })\n            })\n            .await\n    }",
                    "impl Shard {",
                ),
                codex_patched("src/cache/shard.rs"),
            ),
            Call(
                "apply_patch",
                codex_patch(
                    "src/cache/shard.rs",
                    "            .map(|_| Shard {\n                entries: Mutex::new(HashMap::with_capacity(4096)),",
                    "            .map(|_| Shard {\n                entries: moka::future::Cache::builder()\n                    .max_capacity(150000 / SHARDS as u64)\n                    .time_to_live(STALE_AFTER)\n                    .build(),",
                    "pub fn new(origin: Arc<dyn Origin>) -> Self {",
                ),
                codex_patched("src/cache/shard.rs"),
            ),
            Call(
                "apply_patch",
                {
                    "input": "*** Begin Patch\n*** Add File: docs/adr/0007-tile-cache-single-flight.md\n+# 7. Tile cache: moka with single-flight loading\n+\n+Status: accepted (review: Priyanka Raman)\n+\n+## Context\n+The sharded cache held a std Mutex guard across the origin fetch. Under load every worker blocked on the lock and the runtime stopped.\n+\n+## Decision\n+Each shard is a moka future::Cache; misses go through try_get_with, so one fetch per key runs and concurrent callers for that key wait on it.\n+\n+## Consequences\n+No lock is held by our code across an await. Eviction and TTL come from moka. Origin errors are shared between the waiting callers as Arc<OriginError>.\n*** End Patch"
                },
                "Success. Updated the following files:\nA docs/adr/0007-tile-cache-single-flight.md",
            ),
        ),
        A(
            "Running the whole suite with the storm test.",
            Call(
                "shell",
                codex_shell("cargo test 2>&1 | tail -n 200", _TILE),
                codex_json(
                    _cargo_test(
                        1204,
                        {},
                        "\ntest result: ok. 164 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 3.12s\n\n     Running tests/miss_storm.rs (target/debug/deps/miss_storm-0b6ad1e8e3b0c7f2)\n\nrunning 1 test\ntest concurrent_miss_storm_completes ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.27s",
                    ),
                    seconds=41.7,
                ),
            ),
        ),
        U(
            "Priyanka wants the staging load test at 5000 rps instead of 3000, that's the forecast for new year's eve."
        ),
        A(
            "Deploying the branch to staging and running wrk2 at 5000 rps.",
            Call(
                "shell",
                codex_shell(
                    "skaffold run -p staging --tail=false && wrk2 -t16 -c512 -d2m -R5000 --latency -s scripts/tiles.lua http://tile-cache.staging.svc:8080",
                    _TILE,
                ),
                codex_json(_wrk(1205, 5000, "21.74ms", False), seconds=133.0),
            ),
            Call(
                "shell",
                codex_shell("cargo tree -e normal --depth 1", _TILE),
                codex_text(
                    "tile-cache v0.14.2 (/srv/src/tile-cache)\n"
                    + "\n".join(
                        f"├── {name} v{random.Random(1206 + i).randint(0, 4)}.{random.Random(i).randint(1, 40)}.{random.Random(i * 5).randint(0, 20)}"
                        for i, name in enumerate(
                            [
                                "anyhow",
                                "axum",
                                "bytes",
                                "clap",
                                "futures",
                                "hyper",
                                "metrics",
                                "metrics-exporter-prometheus",
                                "moka",
                                "reqwest",
                                "serde",
                                "serde_json",
                                "thiserror",
                                "tokio",
                                "tower",
                                "tower-http",
                                "tracing",
                                "tracing-subscriber",
                                "twox-hash",
                            ]
                        )
                    ),
                    seconds=0.4,
                ),
            ),
        ),
        A(
            "At 5000 rps the run held for the full two minutes with no stall and a p99 of 21.74ms, inside the 35 ms SLO. Summary for Priyanka: the deadlock was a std MutexGuard held across the origin fetch in src/cache/shard.rs; the shard is now a moka future cache with single-flight loading, capped at 150000 entries, and tests/miss_storm.rs reproduces the old hang and passes now; docs/adr/0007-tile-cache-single-flight.md records why. No block_on anywhere."
        ),
    ],
    [
        Fact("person", ("Priyanka", "tech lead"), "tile-cache tech lead, signs off cache changes"),
        Fact("tool_output", ("shard.rs:118",), "where the workers are parked, mid-dump"),
        Fact("tool_output", ("await_holding_lock",), "clippy lint among many warnings"),
        Fact("tool_output", ("21.74ms",), "p99 of the 5000 rps run, among percentiles"),
        Fact("conclusion", ("MutexGuard", "origin fetch"), "why the runtime deadlocks"),
        Fact("decision", ("moka", "single-flight"), "cache choice and why"),
        Fact("constraint", ("35 ms",), "p99 SLO"),
        Fact("constraint", ("block_on",), "never in the request path"),
        Fact("number", ("150000",), "max_capacity, the corrected value"),
        Fact("number", ("90 seconds",), "time to stall, said in conversation"),
        Fact("number", ("5000 rps",), "load-test rate, the later value"),
        Fact("path", ("0007-tile-cache-single-flight.md",), "decision record written"),
        Fact("path", ("tests/miss_storm.rs",), "reproduction test added"),
    ],
)


# -- i3: a Bazel remote cache handing back stale outputs ---------------------------------------

_MONO = "/home/ci/atlas-mono"
_PKGS = [
    "services/router",
    "services/billing-gw",
    "services/geo",
    "services/notify",
    "libs/authz",
    "libs/rpc",
    "libs/featureflags",
    "tools/codegen",
    "services/ledger-sync",
    "services/profile",
]


def _runners(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "NAME                     STATUS   BUSY   LABELS                                   IMAGE                   LAST JOB"
    ]
    for i in range(96):
        pool = rng.choice(["linux-x86", "linux-x86", "linux-arm", "linux-x86-large"])
        name = f"ci-runner-{pool.split('-')[-1]}-{i:02d}"
        image = "ubuntu-22.04-2026.11.2"
        if i == 53:
            name, image, pool = "ci-runner-legacy-14", "ubuntu-20.04-2023.06.1", "linux-x86"
        lines.append(
            f"{name:<24} {rng.choice(['online', 'online', 'online', 'offline']):<8} {rng.choice(['true', 'false']):<6} self-hosted,{pool},bazel{'':<{max(0, 22 - len(pool))}} {image:<23} {rng.randint(1, 59)}m ago"
        )
    return "\n".join(lines)


def _exec_diff(seed: int) -> str:
    rng = random.Random(seed)
    out = [
        "# execlog compare: runner ci-runner-x86-07 (good) vs ci-runner-legacy-14 (bad), build 88213 vs 88219",
        "",
    ]
    for i in range(130):
        pkg = rng.choice(_PKGS)
        mnemonic = rng.choice(
            ["GoCompilePkg", "GoLink", "GenProto", "Javac", "TsProject", "CppCompile"]
        )
        key = short_hash(rng, 16)
        digest = short_hash(rng, 8)
        out.append(
            f"action {mnemonic:<13} //{pkg}:{rng.choice(['lib', 'proto', 'server', 'client', 'go_default_library'])}  key={key}  outputs_equal=true  digest={digest}"
        )
        if i == 71:
            out += [
                "action GenProto      //services/router:routes_go_proto  key=e3b1f07a2c9d4411  outputs_equal=FALSE",
                "    output bazel-out/k8-fastbuild/bin/services/router/routes_go_proto_/atlas/router/routes.pb.go",
                "      good: sha256:51aa6c3e0f7e9b2d...  size=48211",
                "      bad:  sha256:9c4e07d1b38a5f62...  size=39877",
                "    environment differs:",
                "      good: PATH=/usr/local/bin:/usr/bin:/bin",
                "      bad:  PATH=/opt/protoc-3.21.12/bin:/usr/local/bin:/usr/bin:/bin",
                "    cache: bad result uploaded by ci-runner-legacy-14 at 2026-12-01T03:12:44Z, served 212 times since",
            ]
    out.append("")
    out.append("summary: 131 actions compared, 130 equal, 1 differ (same key, different outputs)")
    return "\n".join(out)


def _bazelrc() -> str:
    flags = [
        "common --enable_bzlmod",
        "common --lockfile_mode=error",
        "build --incompatible_disallow_empty_glob",
        "build --experimental_reuse_sandbox_directories",
        "build --nolegacy_external_runfiles",
        "build --workspace_status_command=tools/bazel/workspace_status.sh",
        "build --disk_cache=~/.cache/bazel-disk",
        "build --remote_cache=grpcs://bazel-cache.atlas.internal:443",
        "build --remote_timeout=60s",
        "build --remote_upload_local_results=false",
        "build --remote_local_fallback",
        "build --grpc_keepalive_time=30s",
        "build --experimental_remote_cache_compression",
        "build --remote_instance_name=linux-x86",
        "build --jobs=HOST_CPUS*1.5",
        "build --local_test_jobs=HOST_CPUS",
        "build --host_platform=//platforms:linux_x86_64",
        "build --java_runtime_version=remotejdk_21",
        "build --tool_java_runtime_version=remotejdk_21",
        "build --@rules_go//go/config:pure",
        "test --test_output=errors",
        "test --test_summary=terse",
        "test --test_verbose_timeout_warnings",
        "test --flaky_test_attempts=//services/.*@2",
        "",
        "# CI: the runners are the only writers to the cache",
        "build:ci --remote_upload_local_results=true",
        "build:ci --bes_backend=grpcs://bes.atlas.internal:443",
        "build:ci --bes_results_url=https://bes.atlas.internal/invocation/",
        "build:ci --build_metadata=ROLE=CI",
        "build:ci --color=yes",
        "build:ci --curses=no",
        "build:ci --show_progress_rate_limit=10",
        "build:ci --keep_going",
        "build:ci --execution_log_compact_file=/tmp/execlog.zst",
        "build:ci --noexperimental_check_output_files",
        "build:ci --announce_rc",
        "test:ci --test_env=CI=1",
        "test:ci --flaky_test_attempts=3",
        "",
        "# release builds stamp version info",
        "build:release --stamp",
        "build:release --config=ci",
        "build:release --compilation_mode=opt",
        "build:release --strip=always",
        "",
        "try-import %workspace%/user.bazelrc",
    ]
    return "\n".join(["# CI-only settings, imported from .bazelrc with --config=ci", *flags])


def _bazel_build_log(seed: int, count: int) -> str:
    rng = random.Random(seed)
    lines = [
        "INFO: Invocation ID: 5f0d2b7e-41c9-4a7d-9e0b-3c2a88e1d4aa",
        "INFO: Analyzed 2318 targets (912 packages loaded, 40117 targets configured).",
    ]
    for _ in range(count):
        pkg = rng.choice(_PKGS)
        lines.append(
            f"[{rng.randint(100, 9000):,} / 12,044] {rng.choice(['GoCompilePkg', 'GoLink', 'GenProto', 'Javac', 'TsProject', 'Testing'])} //{pkg}:{rng.choice(['lib', 'server', 'proto', 'test'])}; {rng.randint(1, 40)}s {rng.choice(['remote-cache', 'linux-sandbox', 'remote-cache', 'worker'])}"
        )
    lines += [
        "INFO: Elapsed time: 2143.811s, Critical Path: 611.02s",
        "INFO: 12044 processes: 312 remote cache hit, 11402 linux-sandbox, 330 worker.",
        "INFO: Build completed successfully, 12044 total actions",
    ]
    return "\n".join(lines)


def _module_bazel(seed: int) -> str:
    rng = random.Random(seed)
    deps = [
        "rules_go",
        "gazelle",
        "rules_proto",
        "protobuf",
        "rules_java",
        "rules_jvm_external",
        "aspect_rules_ts",
        "aspect_rules_js",
        "rules_oci",
        "rules_pkg",
        "bazel_skylib",
        "platforms",
        "rules_python",
        "rules_cc",
        "toolchains_llvm",
        "rules_nodejs",
        "buildifier_prebuilt",
        "rules_shell",
        "rules_license",
        "googleapis",
        "grpc",
        "rules_buf",
        "aspect_bazel_lib",
        "with_cfg.bzl",
    ]
    out = ['module(name = "atlas_mono", version = "0.0.0")', ""]
    for dep in deps:
        version = f"{rng.randint(0, 9)}.{rng.randint(0, 60)}.{rng.randint(0, 12)}"
        if dep == "protobuf":
            version = "29.2"
        extra = ', repo_name = "com_google_protobuf"' if dep == "protobuf" else ""
        out.append(f'bazel_dep(name = "{dep}", version = "{version}"{extra})')
    out += [
        "",
        'go_sdk = use_extension("@rules_go//go:extensions.bzl", "go_sdk")',
        'go_sdk.download(version = "1.23.4")',
        "",
        'go_deps = use_extension("@gazelle//:extensions.bzl", "go_deps")',
        'go_deps.from_file(go_mod = "//:go.mod")',
        "use_repo(",
        "    go_deps,",
    ]
    for i in range(40):
        out.append(
            f'    "com_github_{rng.choice(["acme", "hashicorp", "google", "uber", "stretchr", "grpc_ecosystem"])}_{rng.choice(["go", "zap", "uuid", "testify", "retry", "otel", "cmp"])}_{i}",'
        )
    out += [
        ")",
        "",
        'maven = use_extension("@rules_jvm_external//:extensions.bzl", "maven")',
        "maven.install(",
        "    artifacts = [",
    ]
    for i in range(30):
        out.append(
            f'        "com.{rng.choice(["google.guava", "fasterxml.jackson.core", "squareup.okhttp3", "zaxxer"])}:{rng.choice(["guava", "jackson-databind", "okhttp", "HikariCP"])}-{i}:{rng.randint(1, 33)}.{rng.randint(0, 9)}.{rng.randint(0, 9)}",'
        )
    out += ["    ],", '    lock_file = "//:maven_install.json",', ")", 'use_repo(maven, "maven")']
    return "\n".join(out)


I3 = Session(
    "i3-bazel-stale-cache",
    [
        U(
            "Something is wrong with our Bazel remote cache. CI is green but the router binary that went to prod twice this week had routes from an old proto: fields added a month ago were just missing. Lucia Ferrer owns build infra and the cache, loop her in on anything you change. The monorepo is at /home/ci/atlas-mono."
        ),
        A(
            "Looking at who wrote the bad result first. Listing the runner fleet and comparing the execution logs of a good and a bad router build.",
            Call(
                "Bash",
                {
                    "command": "gh api /orgs/atlas/actions/runners --paginate --jq '.runners[] | [.name,.status,.busy,(.labels|map(.name)|join(\",\")),.image,.last_job] | @tsv' | column -t",
                    "description": "Self-hosted runner inventory",
                },
                _runners(1301),
            ),
            Call(
                "Bash",
                {
                    "command": f"cd {_MONO} && tools/bazel/execlog_compare.py --good artifacts/88213/execlog.zst --bad artifacts/88219/execlog.zst --only-different-or-sample 130",
                    "description": "Compare execution logs of a good and a bad build",
                },
                _exec_diff(1302),
            ),
        ),
        A(
            "The GenProto action for routes_go_proto has one key and two outputs, and the only difference in its environment is PATH. Checking how actions get their environment and whether anything sets strict env.",
            Call(
                "Read",
                {"file_path": f"{_MONO}/tools/bazel/ci.bazelrc"},
                numbered(_bazelrc()),
            ),
            Call(
                "Grep",
                {
                    "pattern": "strict_action_env|action_env",
                    "path": _MONO,
                    "glob": "*rc",
                    "output_mode": "content",
                    "-n": True,
                },
                "No matches found",
            ),
            Call(
                "Bash",
                {
                    "command": f"cd {_MONO} && grep -rn 'protoc' tools/ci/images/ | head -n 20",
                    "description": "Where protoc is installed on runner images",
                },
                "tools/ci/images/ubuntu-20.04/Dockerfile:33:RUN curl -sSL https://releases.example.internal/protoc/protoc-3.21.12-linux-x86_64.zip -o /tmp/protoc.zip \\\ntools/ci/images/ubuntu-20.04/Dockerfile:34:    && unzip /tmp/protoc.zip -d /opt/protoc-3.21.12 && rm /tmp/protoc.zip\ntools/ci/images/ubuntu-20.04/Dockerfile:35:ENV PATH=/opt/protoc-3.21.12/bin:$PATH\ntools/ci/images/ubuntu-22.04/Dockerfile:12:# protoc comes from the toolchain in MODULE.bazel, never from the image",
            ),
        ),
        A(
            "Here is the chain. --incompatible_strict_action_env is not set anywhere, so actions inherit the runner's PATH, yet PATH is not part of the action key the way we run it. Our proto rule shells out to whatever protoc is first on PATH. The one runner still on the 2020 image puts protoc 3.21 first, generated an older routes.pb.go under the same key as everyone else, uploaded it, and the cache has served that result ever since. The GenProto rule should use the hermetic toolchain, and strict action env stops PATH leaking in."
        ),
        U(
            "Hamid Rahimi, who's release captain this week, counted it: 212 builds since the first of the month pulled the bad output. Lucia's question is whether we flush the whole cache."
        ),
        A(
            "I'd rather not flush. I'm proposing a new remote_instance_name instead: results are namespaced by instance name, so a new one starts a clean namespace for CI at once while the old entries simply age out, and nobody pays for a full flush, which means roughly six hours of cold builds across the whole engineering org. New name linux-x86-v2.",
            Call(
                "Bash",
                {
                    "command": f"cd {_MONO} && bazel build --config=ci //services/router:server --remote_instance_name=linux-x86-v2 2>&1 | tail -n 270",
                    "description": "Cold build of the router in a new namespace",
                },
                _bazel_build_log(1303, 320),
            ),
        ),
        U(
            "Lucia agrees with a fresh namespace, but our naming convention puts the month in it: call it linux-x86-2026-12, not v2. Two rules from her as well: laptops must never write to the cache, keep remote_upload_local_results off outside CI. And no one uses --noremote_accept_cached on CI to paper over this, we're capped on build minutes."
        ),
        A(
            "Updating the CI rc: strict action env on, and the instance name linux-x86-2026-12. Laptops keep remote_upload_local_results=false from the base rc.",
            Call(
                "Edit",
                {
                    "file_path": f"{_MONO}/tools/bazel/ci.bazelrc",
                    "old_string": "build --remote_instance_name=linux-x86\n",
                    "new_string": "build --remote_instance_name=linux-x86-2026-12\nbuild --incompatible_strict_action_env\n",
                },
                edited(
                    f"{_MONO}/tools/bazel/ci.bazelrc",
                    "build --remote_upload_local_results=false\nbuild --remote_local_fallback\nbuild --grpc_keepalive_time=30s\nbuild --experimental_remote_cache_compression\nbuild --remote_instance_name=linux-x86-2026-12\nbuild --incompatible_strict_action_env\nbuild --jobs=HOST_CPUS*1.5",
                    11,
                ),
            ),
            Call(
                "Read",
                {"file_path": f"{_MONO}/MODULE.bazel"},
                numbered(_module_bazel(1305)),
            ),
            Call(
                "Read",
                {"file_path": f"{_MONO}/tools/proto/defs.bzl", "offset": 40, "limit": 40},
                numbered(
                    'def _go_proto_gen_impl(ctx):\n    out = ctx.actions.declare_file(ctx.attr.importpath.split("/")[-1] + ".pb.go")\n    args = ctx.actions.args()\n    args.add("--go_out=paths=source_relative:" + out.dirname)\n    args.add_all(ctx.files.srcs)\n    ctx.actions.run_shell(\n        inputs = ctx.files.srcs + ctx.files.deps,\n        outputs = [out],\n        command = "protoc \\"$@\\"",\n        arguments = [args],\n        mnemonic = "GenProto",\n        progress_message = "Generating Go proto_library %s" % ctx.label,\n        use_default_shell_env = True,\n    )\n    return [DefaultInfo(files = depset([out]))]\n\ngo_proto_gen = rule(\n    implementation = _go_proto_gen_impl,\n    attrs = {\n        "srcs": attr.label_list(allow_files = [".proto"]),\n        "deps": attr.label_list(),\n        "importpath": attr.string(mandatory = True),\n    },\n)',
                    40,
                ),
            ),
        ),
        A(
            "The rule runs a bare `protoc` with use_default_shell_env. Pointing it at the toolchain's protoc so PATH cannot choose the compiler.",
            Call(
                "MultiEdit",
                {
                    "file_path": f"{_MONO}/tools/proto/defs.bzl",
                    "edits": [
                        {
                            "old_string": "        inputs = ctx.files.srcs + ctx.files.deps,",
                            "new_string": "        inputs = ctx.files.srcs + ctx.files.deps,\n        tools = [ctx.executable._protoc],",
                        },
                        {
                            "old_string": '        command = "protoc \\"$@\\"",',
                            "new_string": '        command = ctx.executable._protoc.path + " \\"$@\\"",',
                        },
                        {
                            "old_string": "        use_default_shell_env = True,\n",
                            "new_string": "",
                        },
                        {
                            "old_string": '        "importpath": attr.string(mandatory = True),',
                            "new_string": '        "importpath": attr.string(mandatory = True),\n        "_protoc": attr.label(default = "@com_google_protobuf//:protoc", executable = True, cfg = "exec"),',
                        },
                    ],
                },
                _multi_edited(f"{_MONO}/tools/proto/defs.bzl", 4),
            ),
        ),
        U(
            "Also give the cache bucket a lifecycle rule so stale namespaces go away by themselves. 14 days. Hmm, no, Lucia says 30 days: release branches get rebuilt up to a month after the cut."
        ),
        A(
            "Writing the lifecycle rule with 30 days and a script to retire the legacy runner.",
            Call(
                "Write",
                {
                    "file_path": f"{_MONO}/infra/bazel-cache/lifecycle.json",
                    "content": '{\n  "rule": [\n    {\n      "action": {"type": "Delete"},\n      "condition": {"daysSinceCustomTime": 30, "matchesPrefix": ["cas/", "ac/"]}\n    }\n  ]\n}\n',
                },
                f"File created successfully at: {_MONO}/infra/bazel-cache/lifecycle.json",
            ),
            Call(
                "Write",
                {
                    "file_path": f"{_MONO}/tools/ci/retire_runner.sh",
                    "content": '#!/usr/bin/env bash\n# Drain and deregister a self-hosted runner; its image is never reused.\nset -euo pipefail\nname="$1"\nid=$(gh api /orgs/atlas/actions/runners --paginate --jq ".runners[] | select(.name==\\"$name\\") | .id")\ngh api -X DELETE "/orgs/atlas/actions/runners/$id"\ngcloud compute instances delete "$name" --zone europe-west4-b --quiet\n',
                },
                f"File created successfully at: {_MONO}/tools/ci/retire_runner.sh",
            ),
            Call(
                "Bash",
                {
                    "command": f"cd {_MONO} && gcloud storage buckets update gs://atlas-bazel-cache --lifecycle-file=infra/bazel-cache/lifecycle.json && bash tools/ci/retire_runner.sh ci-runner-legacy-14",
                    "description": "Apply lifecycle, retire the legacy runner",
                },
                "Updating gs://atlas-bazel-cache/...\n  Completed 1\nDeleted [https://www.googleapis.com/compute/v1/projects/atlas-ci/zones/europe-west4-b/instances/ci-runner-legacy-14].",
            ),
        ),
        A(
            "Rebuilding the router in the new namespace on two different runners and checking the generated file matches.",
            Call(
                "Bash",
                {
                    "command": f"cd {_MONO} && bazel build --config=ci //services/router:server 2>&1 | tail -n 250 && sha256sum bazel-bin/services/router/routes_go_proto_/atlas/router/routes.pb.go",
                    "description": "Router build with strict env, digest of generated code",
                },
                _bazel_build_log(1304, 240)
                + "\n51aa6c3e0f7e9b2d47c1085e2f6d9a3b0c7e11f4a2d5b8c9e0f1a2b3c4d5e6f7  bazel-bin/services/router/routes_go_proto_/atlas/router/routes.pb.go",
            ),
        ),
        A(
            "The router now builds the good routes.pb.go (51aa6c3e) in the linux-x86-2026-12 namespace. Summary: the stale output came from ci-runner-legacy-14, whose PATH put protoc 3.21.12 ahead of the toolchain while strict action env was off; ci.bazelrc now sets --incompatible_strict_action_env and the new instance name, tools/proto/defs.bzl uses the hermetic protoc, the bucket deletes entries after 30 days, and tools/ci/retire_runner.sh removed the legacy runner. Hamid should rebuild the 212 affected builds' release artifacts before the next deploy."
        ),
    ],
    [
        Fact("person", ("Lucia", "build infra"), "owns build infra and the cache"),
        Fact("person", ("Hamid", "release captain"), "release captain this week"),
        Fact("tool_output", ("ci-runner-legacy-14",), "runner with the old image, mid-inventory"),
        Fact("tool_output", ("protoc-3.21.12",), "PATH entry that differed, mid-diff"),
        Fact("tool_output", ("9c4e07d1",), "digest of the bad output, mid-diff"),
        Fact("conclusion", ("strict_action_env", "action key"), "why one key had two outputs"),
        Fact(
            "decision",
            ("remote_instance_name", "cold builds"),
            "new namespace instead of a flush, and why",
        ),
        Fact("decision", ("linux-x86-2026-12",), "instance name, the later one"),
        Fact("constraint", ("remote_upload_local_results",), "laptops never write the cache"),
        Fact("constraint", ("noremote_accept_cached",), "not on CI"),
        Fact("number", ("30 days",), "bucket lifecycle, the corrected value"),
        Fact("number", ("212 builds",), "builds affected, said in conversation"),
        Fact("path", ("tools/bazel/ci.bazelrc",), "CI rc edited"),
        Fact("path", ("tools/ci/retire_runner.sh",), "runner retirement script written"),
    ],
)


# -- i4: a privacy erasure job that leaves data behind -----------------------------------------

_PRIV = "/srv/app/privacy-jobs"
_PII_TABLES = [
    "accounts",
    "profiles",
    "addresses",
    "phone_numbers",
    "sessions",
    "login_events",
    "orders",
    "order_notes",
    "payment_methods",
    "newsletter_subscriptions",
    "push_tokens",
    "reviews",
    "review_photos",
    "wishlists",
    "ticket_attachments",
    "chat_transcripts",
    "referrals",
    "loyalty_ledger",
    "device_fingerprints",
    "consent_records",
]

_BATCHING_PY = '''"""Erase one subject's rows from every table listed in targets.yaml, in batches."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import psycopg

from privacy_jobs.erasure.targets import Target, load_targets

log = logging.getLogger(__name__)

BATCH_SIZE = 500
PAUSE_BETWEEN_BATCHES_S = 0.2


@dataclass
class Outcome:
    table: str
    matched_at_start: int
    deleted: int


def _count(cur: psycopg.Cursor, target: Target, subject_id: str) -> int:
    cur.execute(
        f"SELECT count(*) FROM {target.table} WHERE {target.column} = %s", (subject_id,)
    )
    return cur.fetchone()[0]


def _select_batch(cur: psycopg.Cursor, target: Target, subject_id: str, offset: int) -> list[int]:
    cur.execute(
        f"SELECT id FROM {target.table} WHERE {target.column} = %s ORDER BY id LIMIT %s OFFSET %s",
        (subject_id, BATCH_SIZE, offset),
    )
    return [row[0] for row in cur.fetchall()]


def erase_table(conn: psycopg.Connection, target: Target, subject_id: str) -> Outcome:
    with conn.cursor() as cur:
        matched = _count(cur, target, subject_id)
        deleted = 0
        offset = 0
        batch_no = 0
        while True:
            ids = _select_batch(cur, target, subject_id, offset)
            if not ids:
                break
            cur.execute(f"DELETE FROM {target.table} WHERE id = ANY(%s)", (ids,))
            conn.commit()
            deleted += cur.rowcount
            batch_no += 1
            log.info(
                "erasure batch=%d table=%s skip=%d limit=%d deleted=%d",
                batch_no, target.table, offset, BATCH_SIZE, cur.rowcount,
            )
            offset += BATCH_SIZE
            time.sleep(PAUSE_BETWEEN_BATCHES_S)
    return Outcome(target.table, matched, deleted)


def erase_subject(conn: psycopg.Connection, subject_id: str) -> list[Outcome]:
    outcomes = [erase_table(conn, t, subject_id) for t in load_targets()]
    for o in outcomes:
        if o.deleted != o.matched_at_start:
            log.warning("erasure incomplete table=%s matched=%d deleted=%d", o.table, o.matched_at_start, o.deleted)
    return outcomes
'''


def _targets_yaml(seed: int) -> str:
    rng = random.Random(seed)
    out = [
        "# Tables holding personal data, and the column that links a row to its subject.",
        "targets:",
    ]
    tables = [*_PII_TABLES, "ticket_messages"]
    rng.shuffle(tables)
    for t in tables:
        out += [
            f"  - table: {t}",
            f"    column: {rng.choice(['subject_id', 'subject_id', 'account_subject_id', 'owner_subject_id'])}",
            f"    owner: {rng.choice(['identity', 'commerce', 'support-platform', 'growth', 'payments'])}",
            f"    retention_class: {rng.choice(['pii', 'pii', 'pii-financial', 'pii-derived'])}",
            f"    legal_hold_check: {rng.choice(['true', 'false'])}",
        ]
    return "\n".join(out)


def _audit(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "        table_name         | partition | subjects_checked | rows_remaining | oldest_row_created",
        "---------------------------+-----------+------------------+----------------+--------------------",
    ]
    for i in range(130):
        table = rng.choice(_PII_TABLES)
        part = f"p2026_{1 + i % 12:02d}"
        remaining = 0 if rng.random() < 0.8 else rng.randint(1, 9)
        lines.append(
            f" {table:<25} | {part:<9} | {rng.randint(180, 240):>16} | {remaining:>14} | 2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}"
        )
        if i == 68:
            lines.append(
                f" {'ticket_messages':<25} | {'(all)':<9} | {212:>16} | {12480:>14} | 2026-10-14"
            )
    lines.append("(131 rows)")
    return "\n".join(lines)


def _job_log(seed: int) -> str:
    rng = random.Random(seed)
    lines = []
    minute = 0
    for req in range(6):
        rid = f"ER-{20920 + req * 3 + rng.randint(0, 2)}"
        lines.append(
            f"2026-12-06T02:{minute:02d}:01Z INFO privacy_jobs.worker picked request={rid} subject=sha256:{short_hash(rng, 16)}"
        )
        for table in [*rng.sample(_PII_TABLES, 6), "ticket_messages"]:
            batches = rng.randint(1, 3) if table != "ticket_messages" else 12
            for b in range(batches):
                lines.append(
                    f"2026-12-06T02:{minute:02d}:{rng.randint(2, 59):02d}Z INFO privacy_jobs.erasure.batching erasure batch={b + 1} table={table} skip={b * 500} limit=500 deleted={500 if batches > 1 and b < batches - 1 else rng.randint(1, 499)}"
                )
            minute = (minute + 1) % 60
        lines.append(
            f"2026-12-06T02:{minute:02d}:{rng.randint(2, 59):02d}Z WARNING privacy_jobs.erasure.batching erasure incomplete table=ticket_messages matched={rng.randint(11000, 12400) * 2} deleted=6000"
        )
        lines.append(
            f"2026-12-06T02:{minute:02d}:{rng.randint(2, 59):02d}Z INFO privacy_jobs.worker finished request={rid} status=completed"
        )
    return "\n".join(lines)


def _explain(seed: int, planted: list[str], offset_plan: bool) -> str:
    rng = random.Random(seed)
    out = []
    if offset_plan:
        out += [
            "Limit  (cost=1822049.18..1822049.31 rows=500 width=8) (actual time=81211.904..81212.133 rows=500 loops=1)",
            "  Buffers: shared hit=18822 read=1941250, temp read=48113 written=48113",
            "  ->  Sort  (cost=1822036.68..1822092.11 rows=22173 width=8) (actual time=81211.870..81212.021 rows=9000 loops=1)",
            "        Sort Key: id",
            "        Sort Method: top-N heapsort  Memory: 1193kB",
            "        ->  Seq Scan on ticket_messages  (cost=0.00..1820711.35 rows=22173 width=8) (actual time=12.331..81198.446 rows=24960 loops=1)",
            "              Filter: (subject_id = 'sha256:7e1c9a04b2f35d18'::text)",
            "              Rows Removed by Filter: 48113022",
        ]
    else:
        out += [
            "Limit  (cost=0.70..1411.96 rows=400 width=8) (actual time=0.041..0.912 rows=400 loops=1)",
            "  Buffers: shared hit=409",
            "  ->  Index Only Scan using ticket_messages_subject_id_id_idx on ticket_messages  (cost=0.70..78229.11 rows=22173 width=8) (actual time=0.039..0.861 rows=400 loops=1)",
            "        Index Cond: ((subject_id = 'sha256:7e1c9a04b2f35d18'::text) AND (id > 918220411))",
            "        Heap Fetches: 0",
        ]
    for i in range(38):
        out.append(
            f"  Worker {i % 4}:  actual time={rng.uniform(1, 900):.3f}..{rng.uniform(900, 81000):.3f} rows={rng.randint(100, 9000)} loops=1  Buffers: shared hit={rng.randint(100, 90000)} read={rng.randint(0, 900000)}"
        )
    out += [
        "Settings: work_mem = '64MB', random_page_cost = '1.1', effective_io_concurrency = '200'",
        *planted,
    ]
    return "\n".join(out)


def _pytest(seed: int, count: int, planted: dict[float, str], tail: str) -> str:
    rng = random.Random(seed)
    mods = [
        "tests/erasure/test_targets.py",
        "tests/erasure/test_batching.py",
        "tests/export/test_dsar_export.py",
        "tests/test_worker.py",
        "tests/test_consent.py",
    ]
    verbs = ["erases", "skips", "exports", "redacts", "respects", "counts", "retries"]
    objs = [
        "legal_hold",
        "empty_subject",
        "partitioned_table",
        "missing_column",
        "unicode_email",
        "archived_rows",
        "null_subject",
    ]
    lines = [f"============================= test session starts ({count} items) =="]
    for i in range(count):
        lines.append(
            f"{rng.choice(mods)}::test_{rng.choice(verbs)}_{rng.choice(objs)}_{i} PASSED{' ' * 4}[{100 * (i + 1) // count:3d}%]"
        )
    return bury(lines, planted) + "\n" + tail


I4 = Session(
    "i4-erasure-gaps",
    [
        U(
            "Bad one. The quarterly DSAR audit found personal data still sitting there for people we told we'd erased. Margit Halvorsen, our DPO, has to approve whatever remediation we do. The erasure job lives in /srv/app/privacy-jobs. Where's the hole?"
        ),
        A(
            "Reading the batching code and the table list it erases from.",
            Call(
                "Read",
                {"file_path": f"{_PRIV}/privacy_jobs/erasure/batching.py"},
                numbered(_BATCHING_PY),
            ),
            Call(
                "Read",
                {"file_path": f"{_PRIV}/privacy_jobs/erasure/targets.yaml"},
                numbered(_targets_yaml(1401)),
            ),
        ),
        A(
            "Running the audit query for every subject erased since October, then the worker log of last night's run.",
            Call(
                "Bash",
                {
                    "command": f'cd {_PRIV} && psql "$PRIVACY_RO_DSN" -f sql/audit_remaining_rows.sql',
                    "description": "Rows left for erased subjects, per table and partition",
                },
                _audit(1402),
            ),
            Call(
                "Bash",
                {
                    "command": "kubectl -n privacy logs job/erasure-worker-29901742 --tail=400",
                    "description": "Erasure worker log",
                },
                _job_log(1403),
            ),
        ),
        A(
            "The audit is clean everywhere except ticket_messages, where 12480 rows remain, and the log explains it. The loop pages with LIMIT 500 OFFSET n over rows it is deleting at the same time: after a batch deletes 500 rows, the next query skips 500 more that have moved up into the deleted rows' places. Every other page is passed over, so only about half of a large subject's messages get removed. Small tables never show it because they fit in one batch. The warning 'erasure incomplete' has been logged on every run and nothing alerts on it."
        ),
        U(
            "Chidi Okafor, who leads the support platform team, owns ticket_messages. His condition: never more than 400 rows per delete batch, bigger deletes hold locks long enough to trip their app's 2 s statement_timeout."
        ),
        A(
            "Then the batch size drops to 400 as well. Comparing the current query's plan with a keyset version on the subject/id index.",
            Call(
                "Bash",
                {
                    "command": f'cd {_PRIV} && psql "$PRIVACY_RO_DSN" -c "EXPLAIN (ANALYZE, BUFFERS, SETTINGS) SELECT id FROM ticket_messages WHERE subject_id = \'sha256:7e1c9a04b2f35d18\' ORDER BY id LIMIT 500 OFFSET 8500"',
                    "description": "Plan of the OFFSET page query",
                },
                _explain(1404, ["Planning Time: 0.412 ms", "Execution Time: 81234.551 ms"], True),
            ),
            Call(
                "Bash",
                {
                    "command": f'cd {_PRIV} && psql "$PRIVACY_RO_DSN" -c "EXPLAIN (ANALYZE, BUFFERS, SETTINGS) SELECT id FROM ticket_messages WHERE subject_id = \'sha256:7e1c9a04b2f35d18\' AND id > 918220411 ORDER BY id LIMIT 400"',
                    "description": "Plan of the keyset page query",
                },
                _explain(1405, ["Planning Time: 0.388 ms", "Execution Time: 0.958 ms"], False),
            ),
        ),
        A(
            "I'm switching the loop to keyset pagination: select ids greater than the last id seen, ordered by id, limit 400. Offsets are the wrong tool here because every delete renumbers the rows behind it, whereas an id bound does not move when rows vanish; it also turns an 81-second scan into an index-only scan. First a test that pins the bug.",
            Call(
                "Write",
                {
                    "file_path": f"{_PRIV}/tests/erasure/test_batching_keyset.py",
                    "content": 'from privacy_jobs.erasure.batching import erase_table\nfrom privacy_jobs.erasure.targets import Target\n\n\ndef test_erasure_removes_all_ticket_messages(pg_conn, make_rows):\n    make_rows("ticket_messages", subject_id="s-1", count=1000)\n    outcome = erase_table(pg_conn, Target("ticket_messages", "subject_id"), "s-1")\n    with pg_conn.cursor() as cur:\n        cur.execute("SELECT count(*) FROM ticket_messages WHERE subject_id = %s", ("s-1",))\n        left = cur.fetchone()[0]\n    assert left == 0\n    assert outcome.deleted == outcome.matched_at_start == 1000\n',
                },
                f"File created successfully at: {_PRIV}/tests/erasure/test_batching_keyset.py",
            ),
            Call(
                "Bash",
                {
                    "command": f"cd {_PRIV} && .venv/bin/pytest -q tests 2>&1 | tail -n 200",
                    "description": "Test suite with the new test",
                },
                _pytest(
                    1406,
                    170,
                    {
                        0.57: "tests/erasure/test_batching_keyset.py::test_erasure_removes_all_ticket_messages FAILED [ 57%]"
                    },
                    '=================================== FAILURES ===================================\n___________________ test_erasure_removes_all_ticket_messages ___________________\n\n    def test_erasure_removes_all_ticket_messages(pg_conn, make_rows):\n        make_rows("ticket_messages", subject_id="s-1", count=1000)\n        outcome = erase_table(pg_conn, Target("ticket_messages", "subject_id"), "s-1")\n        with pg_conn.cursor() as cur:\n            cur.execute("SELECT count(*) FROM ticket_messages WHERE subject_id = %s", ("s-1",))\n            left = cur.fetchone()[0]\n>       assert left == 0\nE       assert 250 == 0\n\ntests/erasure/test_batching_keyset.py:11: AssertionError\n=========================== short test summary info ============================\nFAILED tests/erasure/test_batching_keyset.py::test_erasure_removes_all_ticket_messages - assert 250 == 0\n======================== 1 failed, 170 passed in 24.18s ========================',
                ),
            ),
        ),
        A(
            "Fails as expected. Now the fix.",
            Call(
                "MultiEdit",
                {
                    "file_path": f"{_PRIV}/privacy_jobs/erasure/batching.py",
                    "edits": [
                        {
                            "old_string": "BATCH_SIZE = 500",
                            "new_string": "BATCH_SIZE = 400  # support-platform's lock budget: never more",
                        },
                        {
                            "old_string": 'def _select_batch(cur: psycopg.Cursor, target: Target, subject_id: str, offset: int) -> list[int]:\n    cur.execute(\n        f"SELECT id FROM {target.table} WHERE {target.column} = %s ORDER BY id LIMIT %s OFFSET %s",\n        (subject_id, BATCH_SIZE, offset),\n    )',
                            "new_string": 'def _select_batch(cur: psycopg.Cursor, target: Target, subject_id: str, after_id: int) -> list[int]:\n    # Keyset, not OFFSET: deleting a batch shifts every later offset.\n    cur.execute(\n        f"SELECT id FROM {target.table} WHERE {target.column} = %s AND id > %s ORDER BY id LIMIT %s",\n        (subject_id, after_id, BATCH_SIZE),\n    )',
                        },
                        {
                            "old_string": "        offset = 0\n",
                            "new_string": "        after_id = 0\n",
                        },
                        {
                            "old_string": "            ids = _select_batch(cur, target, subject_id, offset)",
                            "new_string": "            ids = _select_batch(cur, target, subject_id, after_id)",
                        },
                        {
                            "old_string": "            offset += BATCH_SIZE",
                            "new_string": "            after_id = ids[-1]",
                        },
                        {
                            "old_string": '                "erasure batch=%d table=%s skip=%d limit=%d deleted=%d",\n                batch_no, target.table, offset, BATCH_SIZE, cur.rowcount,',
                            "new_string": '                "erasure batch=%d table=%s after_id=%d limit=%d deleted=%d",\n                batch_no, target.table, after_id, BATCH_SIZE, cur.rowcount,',
                        },
                    ],
                },
                _multi_edited(f"{_PRIV}/privacy_jobs/erasure/batching.py", 6),
            ),
            Call(
                "Bash",
                {
                    "command": f"cd {_PRIV} && .venv/bin/pytest -q tests 2>&1 | tail -n 200",
                    "description": "Test suite after the fix",
                },
                _pytest(
                    1407,
                    171,
                    {},
                    "======================== 171 passed in 23.77s ========================",
                ),
            ),
        ),
        U(
            "How many erasure requests were hit? The job has been broken since the 14th of October, that's 7 weeks of requests."
        ),
        A(
            "Counting requests since 2026-10-14 that touched ticket_messages with more than one batch.",
            Call(
                "Bash",
                {
                    "command": f"cd {_PRIV} && psql \"$PRIVACY_RO_DSN\" -c \"SELECT count(DISTINCT request_id) FROM erasure_outcomes WHERE table_name = 'ticket_messages' AND deleted < matched_at_start AND finished_at >= '2026-10-14'\"",
                    "description": "Requests with an incomplete ticket_messages erasure",
                },
                " count\n-------\n  1904\n(1 row)",
            ),
        ),
        A("1,904 requests since October 14 left rows in ticket_messages."),
        U(
            "Margit checked against the request register: it's 1,917. Your query only sees the EU-Central outcomes table, the EU-West shard keeps its own. How do you want to re-erase them?"
        ),
        A(
            "1,917 it is. I'll run the re-erasure as a one-off script over the request ids rather than re-queueing the requests through the worker, because a re-queued request goes through the normal flow and sends the subject a second erasure confirmation email, which would confuse people who already had one. The script calls erase_subject directly and records a new outcome row per request.",
            Call(
                "Write",
                {
                    "file_path": f"{_PRIV}/scripts/reerase_backfill.py",
                    "content": '"""Re-run erasure for requests whose ticket_messages erasure was incomplete. No notifications."""\n\nimport argparse\nimport sys\n\nimport psycopg\n\nfrom privacy_jobs.erasure.batching import erase_subject\nfrom privacy_jobs.outcomes import record_outcomes\n\n\ndef main() -> int:\n    p = argparse.ArgumentParser()\n    p.add_argument("--dsn", action="append", required=True, help="one per shard")\n    p.add_argument("--ids", type=argparse.FileType(), required=True)\n    args = p.parse_args()\n    requests = [line.split(",") for line in args.ids.read().split()]\n    for dsn in args.dsn:\n        with psycopg.connect(dsn) as conn:\n            for request_id, subject_id in requests:\n                record_outcomes(conn, request_id, erase_subject(conn, subject_id), source="backfill")\n    print(f"re-erased {len(requests)} requests", file=sys.stderr)\n    return 0\n\n\nif __name__ == "__main__":\n    raise SystemExit(main())\n',
                },
                f"File created successfully at: {_PRIV}/scripts/reerase_backfill.py",
            ),
        ),
        U(
            "Margit's deadline for the backfill: it has to be done within 25 days of today, that's what our DPA commits us to once we know about a gap."
        ),
        A(
            "At 400 rows a batch with the keyset query, a subject with 25,000 messages takes about 63 batches, a few seconds each, so all 1,917 requests should finish in well under a day across both shards, far inside the 25 days. Summary: OFFSET pagination over rows being deleted skipped every other page, leaving 12480 ticket_messages rows for erased subjects; privacy_jobs/erasure/batching.py now uses keyset pagination at 400 rows, tests/erasure/test_batching_keyset.py covers it, and scripts/reerase_backfill.py re-erases the 1,917 requests without sending emails. Chidi should hear before the backfill starts, since it runs against his table."
        ),
    ],
    [
        Fact("person", ("Margit", "DPO"), "data protection officer, approves remediation"),
        Fact("person", ("Chidi", "support platform"), "owns ticket_messages"),
        Fact("tool_output", ("12480",), "rows left in ticket_messages, mid-audit"),
        Fact("tool_output", ("81234.551",), "OFFSET query execution time, end of a long plan"),
        Fact("tool_output", ("assert 250 == 0",), "new test's failure"),
        Fact("conclusion", ("OFFSET", "every other page"), "why half the rows stay"),
        Fact("decision", ("keyset", "renumbers"), "pagination switch and why"),
        Fact(
            "decision", ("one-off script", "confirmation email"), "backfill by script, not re-queue"
        ),
        Fact("constraint", ("400 rows",), "delete batch limit"),
        Fact("constraint", ("25 days",), "backfill deadline"),
        Fact("number", ("1,917",), "affected requests, the corrected count"),
        Fact("number", ("7 weeks",), "how long it has been broken, said in conversation"),
        Fact("path", ("privacy_jobs/erasure/batching.py",), "batching fixed"),
        Fact("path", ("scripts/reerase_backfill.py",), "backfill script written"),
    ],
)


# -- i5: a transcoding pipeline whose audio drifts ---------------------------------------------

_MEDIA = "/opt/media/transcoder"
_TITLES = ["lecture", "keynote", "panel", "workshop", "interview", "concert", "recap", "demo"]

_FFMPEG_ARGS_PY = '''"""Build the ffmpeg argv for one HLS rendition."""

from __future__ import annotations

from dataclasses import dataclass

SEGMENT_SECONDS = 6
GOP_FRAMES = 180


@dataclass(frozen=True)
class Rendition:
    name: str
    width: int
    height: int
    video_kbps: int
    audio_kbps: int
    profile: str = "high"


def video_args(r: Rendition) -> list[str]:
    return [
        "-c:v", "libx264",
        "-profile:v", r.profile,
        "-preset", "slow",
        "-b:v", f"{r.video_kbps}k",
        "-maxrate", f"{int(r.video_kbps * 1.07)}k",
        "-bufsize", f"{r.video_kbps * 2}k",
        "-vf", f"scale={r.width}:{r.height}:flags=lanczos",
        "-r", "30",
        "-g", str(GOP_FRAMES),
        "-keyint_min", str(GOP_FRAMES),
        "-sc_threshold", "0",
    ]


def audio_args(r: Rendition) -> list[str]:
    return ["-c:a", "aac", "-b:a", f"{r.audio_kbps}k", "-ar", "48000", "-ac", "2"]


def hls_args(out_dir: str) -> list[str]:
    return [
        "-f", "hls",
        "-hls_time", str(SEGMENT_SECONDS),
        "-hls_playlist_type", "vod",
        "-hls_segment_type", "fmp4",
        "-hls_flags", "independent_segments",
        "-hls_segment_filename", f"{out_dir}/seg_%05d.m4s",
        f"{out_dir}/index.m3u8",
    ]


def build(src: str, r: Rendition, out_dir: str) -> list[str]:
    return ["ffmpeg", "-hide_banner", "-y", "-i", src, *video_args(r), *audio_args(r), *hls_args(out_dir)]
'''


def _profile_yaml(seed: int) -> str:
    rng = random.Random(seed)
    out = [
        "# HLS VOD ladder: one entry per rendition, applied to every title",
        "segment_seconds: 6",
        "renditions:",
    ]
    heights = [144, 240, 360, 432, 480, 540, 576, 720, 810, 900, 1080, 1440, 2160]
    for i in range(26):
        h = rng.choice(heights)
        out += [
            f"  - name: r{i:02d}_{h}p_{rng.choice(['h264', 'h264', 'hevc'])}",
            f"    width: {h * 16 // 9}",
            f"    height: {h}",
            f"    video_kbps: {rng.randint(180, 16000)}",
            f"    audio_kbps: {rng.choice([64, 96, 128, 160, 192])}",
            f"    profile: {rng.choice(['baseline', 'main', 'high'])}",
            f"    devices: [{', '.join(rng.sample(['tv', 'web', 'ios', 'android', 'cast', 'roku'], 3))}]",
        ]
    out += [
        "audio:",
        "  sample_rate: 48000",
        "  loudnorm: {I: -16, TP: -1.5, LRA: 11}",
        "output:",
        "  bucket: s3://orrery-vod-renditions",
        "  masters: s3://orrery-masters  # read only",
    ]
    return "\n".join(out)


def _ffprobe_csv(seed: int) -> str:
    rng = random.Random(seed)
    rates = ["30000/1001", "25/1", "24000/1001", "30/1", "30000/1001", "50/1", "60000/1001"]
    lines = [
        "file,codec_name,width,height,r_frame_rate,avg_frame_rate,duration,audio_codec,sample_rate"
    ]
    for i in range(150):
        rate = rng.choice(rates)
        ext = rng.choice(["mov", "mp4", "mov", "mxf"])
        lines.append(
            f"masters/{rng.choice(_TITLES)}_{i:04d}.{ext},{rng.choice(['prores', 'h264', 'dnxhd'])},{rng.choice([1920, 3840, 1280])},{rng.choice([1080, 2160, 720])},{rate},{rate},{rng.randint(600, 9000)}.{rng.randint(100, 899)}000,{rng.choice(['pcm_s24le', 'aac', 'pcm_s16le'])},48000"
        )
    return "\n".join(lines)


def _avsync(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "title                 rendition          src_rate     duration_s  drift_ms_at_end  verdict"
    ]
    for i in range(140):
        rate = rng.choice(["30000/1001", "25/1", "24000/1001", "30/1"])
        dur = rng.randint(600, 7000)
        drift = round(dur * 1.0 if rate == "30000/1001" else rng.uniform(-30, 30))
        title = f"{rng.choice(_TITLES)}_{rng.randint(0, 1500):04d}"
        if i == 83:
            title, rate, dur, drift = "lecture_0412", "30000/1001", 7214, 7218
        verdict = "FAIL" if abs(drift) > 45 else "ok"
        lines.append(
            f"{title:<21} r{rng.randint(0, 25):02d}_{rng.choice([360, 540, 720, 1080])}p{'':<9} {rate:<12} {dur:>10}  {drift:>+15}  {verdict}"
        )
    return "\n".join(lines)


def _tx_pytest(seed: int, count: int, planted: dict[float, str], tail: str) -> str:
    rng = random.Random(seed)
    mods = [
        "tests/test_ladder.py",
        "tests/test_ffmpeg_args.py",
        "tests/test_packager.py",
        "tests/test_thumbnails.py",
        "tests/test_captions.py",
    ]
    verbs = ["builds", "orders", "caps", "names", "validates", "skips", "packs"]
    objs = [
        "hevc_ladder",
        "portrait_source",
        "mono_audio",
        "vtt_captions",
        "4k_master",
        "short_clip",
        "odd_width",
    ]
    lines = [f"============================= test session starts ({count} items) =="]
    for i in range(count):
        lines.append(
            f"{rng.choice(mods)}::test_{rng.choice(verbs)}_{rng.choice(objs)}_{i} PASSED{' ' * 7}[{100 * (i + 1) // count:3d}%]"
        )
    return bury(lines, planted) + "\n" + tail


def _enqueue(seed: int, pool: str) -> str:
    rng = random.Random(seed)
    lines = [f"submitting to pool {pool} (priority=backfill)"]
    for _i in range(110):
        lines.append(
            f"job {short_hash(rng, 12)} queued title={rng.choice(_TITLES)}_{rng.randint(0, 1500):04d} renditions=26 est_minutes={rng.randint(20, 260)}"
        )
    lines.append("... 4726 more")
    lines.append("queued 4836 jobs")
    return "\n".join(lines)


I5 = Session(
    "i5-av-drift",
    [
        U(
            "Viewers are complaining that audio slides out of sync on long VOD titles: by the end of a two-hour lecture the voice is way behind the lips. Femi Adeyemi, our streaming QA lead, found it and has the repro titles. The transcoder is in /opt/media/transcoder."
        ),
        A(
            "Reading the rendition ladder and the argv builder first.",
            Call(
                "shell",
                codex_shell(
                    "cat transcoder/profiles/hls_vod.yaml && cat -n transcoder/pipeline/ffmpeg_args.py",
                    _MEDIA,
                ),
                codex_text(_profile_yaml(1501) + "\n" + numbered(_FFMPEG_ARGS_PY), seconds=0.1),
            ),
        ),
        A(
            "Probing the source masters and running Femi's sync checker over recent renditions.",
            Call(
                "shell",
                codex_shell(
                    "for f in $(aws s3 ls s3://orrery-masters/masters/ | awk '{print $4}' | head -150); do ffprobe -v error -select_streams v:0 -show_entries stream=codec_name,width,height,r_frame_rate,avg_frame_rate:format=duration -of csv=p=0 \"s3://orrery-masters/masters/$f\"; done",
                    _MEDIA,
                ),
                codex_json(_ffprobe_csv(1502), seconds=88.2),
            ),
            Call(
                "shell",
                codex_shell("python -m tools.avsync_probe --since 2026-11-01 --sample 140", _MEDIA),
                codex_text(_avsync(1503), seconds=412.9),
            ),
        ),
        A(
            "Every FAIL comes from a 30000/1001 source, and the drift in milliseconds roughly equals the duration in seconds. Looking for when the frame-rate flag arrived.",
            Call(
                "shell",
                codex_shell("git log --format='%h|%an|%ar|%s' -n 120 -- transcoder/", _MEDIA),
                codex_json(
                    _pipe_log(
                        1504,
                        120,
                        ["f.adeyemi", "j.moreau", "s.lindqvist", "renovate", "a.novak", "y.tanaka"],
                        [
                            "ladder: add r{n} rendition for cast devices",
                            "packager: fmp4 segments for all renditions",
                            "thumbnails: sprite every {n} frames",
                            "captions: pass through CEA-608",
                            "deps: bump ffmpeg image to 7.1.{n}",
                            "Merge pull request #{n} from media/ladder-tweaks",
                            "loudnorm: two-pass for music titles",
                        ],
                        {
                            0.41: "c7d2e90|s.lindqvist|6 weeks ago|transcode: force -r 30 so segments cut at exactly 6 s"
                        },
                    ),
                ),
            ),
        ),
        A(
            "Root cause: video_args passes -r 30 for every source. On a 29.97 fps (30000/1001) master that makes ffmpeg retime the video to a constant 30 fps: the frames are kept but each now lasts 1/30 s instead of 1001/30000 s, so the video track ends up 0.1% shorter, while the audio keeps its real length. Audio therefore lags by about 3.6 seconds per hour of video, which is what avsync shows (lecture_0412 is two hours and drifts over seven seconds). Sources at 25 or 24000/1001 are unaffected because -r 30 duplicates frames there instead of retiming. It came in with c7d2e90, which wanted segments cut at exactly 6 s."
        ),
        U("Could we just fix the audio side with aresample async and leave the video alone?"),
        A(
            "I'd keep audio untouched. The fix I'm making: -fps_mode passthrough so frames keep their source timestamps, and keyframes forced on time (-force_key_frames expr:gte(t,n_forced*6)) instead of a fixed GOP of 180 frames, so segments still cut near 6 s whatever the frame rate. aresample=async gets there by stretching and squeezing the audio, and the music channel already complained about pitch wobble last year when we tried it on concerts."
        ),
        U(
            "OK. Two things you must not break: no segment longer than 6.5 s, the TV app's player stalls above that. And never write anything to s3://orrery-masters, it's under object lock and the job role has no business there."
        ),
        A(
            "Patching the argv builder and the ladder's segment settings.",
            Call(
                "apply_patch",
                codex_patch(
                    "transcoder/pipeline/ffmpeg_args.py",
                    '        "-r", "30",\n        "-g", str(GOP_FRAMES),\n        "-keyint_min", str(GOP_FRAMES),\n        "-sc_threshold", "0",',
                    '        "-fps_mode", "passthrough",\n        "-force_key_frames", f"expr:gte(t,n_forced*{SEGMENT_SECONDS})",\n        "-sc_threshold", "0",',
                    "def video_args(r: Rendition) -> list[str]:",
                ),
                codex_patched("transcoder/pipeline/ffmpeg_args.py"),
            ),
            Call(
                "apply_patch",
                codex_patch(
                    "transcoder/profiles/hls_vod.yaml",
                    "segment_seconds: 6",
                    "segment_seconds: 6\nmax_segment_seconds: 6.5  # TV app stalls on longer segments",
                ),
                codex_patched("transcoder/profiles/hls_vod.yaml"),
            ),
            Call(
                "shell",
                codex_shell("python -m pytest -q tests 2>&1 | tail -n 220", _MEDIA),
                codex_json(
                    _tx_pytest(
                        1505,
                        190,
                        {
                            0.62: "tests/test_packager.py::test_hls_segment_durations_uniform FAILED   [ 62%]"
                        },
                        '=================================== FAILURES ===================================\n______________________ test_hls_segment_durations_uniform ______________________\n\n    def test_hls_segment_durations_uniform(ntsc_clip, tmp_path):\n        playlist = package(ntsc_clip, LADDER[0], tmp_path)\n        for n, seg in enumerate(playlist.segments[:-1]):\n>           assert seg.duration == 6.000, f"segment {n} duration {seg.duration}"\nE           AssertionError: segment 0 duration 6.006\nE           assert 6.006 == 6.0\n\ntests/test_packager.py:58: AssertionError\n=========================== short test summary info ============================\nFAILED tests/test_packager.py::test_hls_segment_durations_uniform - AssertionError: segment 0 duration 6.006\n======================== 1 failed, 189 passed in 71.40s ========================',
                    ),
                    code=1,
                    seconds=73.2,
                ),
            ),
        ),
        A(
            "That test encodes the old behaviour: with real NTSC timing a 180-frame segment is 6.006 s long, which is correct and inside the 6.5 s limit. Changing it to assert the cap rather than an exact 6.000.",
            Call(
                "apply_patch",
                codex_patch(
                    "tests/test_packager.py",
                    '            assert seg.duration == 6.000, f"segment {n} duration {seg.duration}"',
                    '            assert 5.5 <= seg.duration <= 6.5, f"segment {n} duration {seg.duration}"',
                    "def test_hls_segment_durations_uniform(ntsc_clip, tmp_path):",
                ),
                codex_patched("tests/test_packager.py"),
            ),
            Call(
                "shell",
                codex_shell(
                    "python -m pytest -q tests 2>&1 | tail -n 220 && python -m tools.avsync_probe --title lecture_0412 --local out/lecture_0412",
                    _MEDIA,
                ),
                codex_text(
                    _tx_pytest(
                        1506,
                        190,
                        {},
                        "======================== 190 passed in 70.88s ========================",
                    )
                    + "\nlecture_0412          r07_720p           30000/1001         7214              +11  ok",
                    seconds=301.5,
                ),
            ),
        ),
        U(
            "Femi wants every affected title re-transcoded. The probe says 4,310 titles at 30000/1001. Correction from Femi just now: 4,836, the probe skipped the .mxf masters. Put them on transcode-spot-c6i."
        ),
        A(
            "Building the list of 4,836 titles including .mxf masters.",
            Call(
                "shell",
                codex_shell(
                    "python -m tools.find_titles --frame-rate 30000/1001 --include-ext mov,mp4,mxf --since 2026-10-20 > /tmp/retranscode.txt && wc -l /tmp/retranscode.txt",
                    _MEDIA,
                ),
                codex_text("4836 /tmp/retranscode.txt", seconds=19.7),
            ),
        ),
        U(
            "Change of plan on the pool: use transcode-reserved-g5 instead. Spot preemptions keep killing the two-hour titles halfway through."
        ),
        A(
            "Submitting to transcode-reserved-g5.",
            Call(
                "shell",
                codex_shell(
                    "python -m tools.enqueue --pool transcode-reserved-g5 --priority backfill --titles /tmp/retranscode.txt --profile hls_vod",
                    _MEDIA,
                ),
                codex_json(_enqueue(1507, "transcode-reserved-g5"), seconds=44.0),
            ),
        ),
        A(
            "Queued. Recap for Femi: audio drifted because c7d2e90 added -r 30, which retimes 29.97 fps masters and shortens the video by 0.1%, about 3.6 seconds per hour. transcoder/pipeline/ffmpeg_args.py now uses -fps_mode passthrough with time-based keyframes, transcoder/profiles/hls_vod.yaml caps segments at 6.5 s, the packager test asserts the cap, and lecture_0412 now ends within 11 ms. The 4,836 affected titles are re-transcoding on transcode-reserved-g5; nothing writes to the masters bucket."
        ),
    ],
    [
        Fact("person", ("Femi", "QA lead"), "streaming QA lead with the repro titles"),
        Fact("tool_output", ("7218",), "worst drift, mid-table"),
        Fact("tool_output", ("c7d2e90",), "commit that added -r 30, mid-log"),
        Fact("tool_output", ("6.006",), "segment length the old test rejected"),
        Fact("conclusion", ("-r 30", "29.97"), "why the audio drifts"),
        Fact("decision", ("passthrough", "pitch"), "keep source timing, not aresample, and why"),
        Fact("decision", ("transcode-reserved-g5",), "pool, the later choice"),
        Fact("constraint", ("6.5 s",), "segment cap"),
        Fact("constraint", ("orrery-masters",), "never write the masters bucket"),
        Fact("number", ("4,836",), "titles to re-transcode, the corrected count"),
        Fact("number", ("3.6 seconds",), "drift per hour, said in conversation"),
        Fact("path", ("transcoder/pipeline/ffmpeg_args.py",), "argv builder patched"),
        Fact("path", ("transcoder/profiles/hls_vod.yaml",), "ladder patched"),
    ],
)

SESSIONS = [I1, I2, I3, I4, I5]
