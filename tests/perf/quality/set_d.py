# ruff: noqa: E501  (scripted session data: long tool outputs read better unwrapped)
"""Set D: tuning sessions (per-fact results allowed) in the shapes the ledger work targets:
conclusions stated in replies, decisions with their reasons, people with their roles, values
seen only in long tool outputs, a value corrected later. Other domains and wording than set C."""

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
        "d1-sso",
        [
            U(
                "We're moving the admin console to SSO. Tomas is our security lead and reviews every auth change."
            ),
            A(
                "Reading the auth settings and the identity provider metadata.",
                Call(
                    "Read",
                    {"file_path": "/app/admin/settings.py"},
                    source(401, 9)
                    + "\nSESSION_COOKIE_AGE = 28800\nOIDC_ISSUER = 'https://id.example.invalid/realms/staff'\n"
                    + source(402, 9),
                ),
                Call(
                    "Bash",
                    {
                        "command": "curl -s https://id.example.invalid/realms/staff/.well-known/openid-configuration | jq -r .id_token_signing_alg_values_supported[]"
                    },
                    "RS256\nES256",
                ),
            ),
            A("Sessions last 28800 seconds today, and the provider signs with RS256 or ES256."),
            A(
                "Library version.",
                Call(
                    "Bash",
                    {
                        "command": "pip index versions mozilla-django-oidc 2>/dev/null | head -2; pip show mozilla-django-oidc | sed -n 2p"
                    },
                    "mozilla-django-oidc (4.0.1)\nAvailable versions: 4.0.1, 4.0.0, 3.0.0\nVersion: 3.0.0",
                ),
            ),
            A(
                "So the installed client is 3.0.0 while 4.0.1 is available; the upgrade drops Django 3.2 support, which we still run, so we stay on 3.0.0."
            ),
            U("Keep password login working for the break-glass account, only for that one."),
            A(
                "Decision: put SSO behind a per-user flag rather than a global switch, because the break-glass account must keep password login.",
                Call(
                    "Edit",
                    {
                        "file_path": "/app/admin/auth/backends.py",
                        "old_string": "x",
                        "new_string": "y",
                    },
                    "The file /app/admin/auth/backends.py has been updated.",
                ),
                Call(
                    "Edit",
                    {"file_path": "/app/admin/settings.py", "old_string": "x", "new_string": "y"},
                    "The file /app/admin/settings.py has been updated.",
                ),
            ),
            A(
                chatter(41),
                Call(
                    "Bash",
                    {"command": "python manage.py test admin.auth"},
                    passing_tests(403, 64, "admin/auth/tests.py")
                    + "\nERROR: test_logout_clears_session (admin.auth.tests.LogoutTests)\nKeyError: 'oidc_id_token'\nRan 65 tests in 3.2s\nFAILED (errors=1)",
                ),
            ),
            A(
                "The logout test fails because the OIDC token key is missing from the session; logout must tolerate sessions created by password login."
            ),
            A(
                "Fix and rerun.",
                Call(
                    "Edit",
                    {"file_path": "/app/admin/auth/views.py", "old_string": "x", "new_string": "y"},
                    "The file /app/admin/auth/views.py has been updated.",
                ),
                Call(
                    "Bash",
                    {"command": "python manage.py test admin.auth"},
                    passing_tests(404, 65, "admin/auth/tests.py") + "\nRan 65 tests in 3.1s\nOK",
                ),
            ),
            A("All 65 auth tests pass."),
            U(
                "The cookie age should be 8 hours. Actually make it 4 hours, Tomas wants shorter sessions for admins."
            ),
            A(
                "Set SESSION_COOKIE_AGE to 14400 (4 hours). Open: Tomas reviews the branch before we enable SSO for the first ten admins."
            ),
        ],
        [
            Fact("person", ("Tomas", "security"), "person with role"),
            Fact("tool_output", ("28800",), "cookie age read from settings"),
            Fact("tool_output", ("RS256",), "signing alg from curl"),
            Fact("conclusion", ("3.0.0", "Django 3.2"), "why we stay on 3.0.0"),
            Fact("constraint", ("break-glass",), "keep password login for one account"),
            Fact("decision", ("per-user flag", "break-glass"), "flag and why"),
            Fact("tool_output", ("oidc_id_token",), "KeyError"),
            Fact("conclusion", ("logout", "password login"), "why logout failed"),
            Fact("path", ("admin/auth/backends.py",), "edited"),
            Fact("path", ("admin/auth/views.py",), "edited"),
            Fact("number", ("65",), "tests"),
            Fact("number", ("14400",), "corrected cookie age"),
        ],
    ),
    Session(
        "d2-frontend-perf",
        [
            U(
                "The product page got slow after last week's release. Find out why. Aiko from design owns the image guidelines."
            ),
            A(
                "Profiling the page and reading the bundle report.",
                Call(
                    "Bash",
                    {
                        "command": "npx lighthouse http://localhost:4173/product/42 --only-categories=performance --output=json --quiet | jq '.audits[\"largest-contentful-paint\"].displayValue, .categories.performance.score'"
                    },
                    '"4.8 s"\n0.41',
                ),
                Call(
                    "Bash",
                    {
                        "command": "npx vite-bundle-visualizer --json | jq -r '.[] | \"\\(.size) \\(.name)\"' | sort -rn | head -30"
                    },
                    "\n".join(f"{9000 - i * 150} chunk-{i}.js" for i in range(25))
                    + "\n812344 vendor-charts.js\n",
                ),
            ),
            A(
                "LCP is 4.8 s and the performance score is 0.41; vendor-charts.js at 812344 bytes dominates the bundle."
            ),
            A(
                "Who imports the charts?",
                Call(
                    "Bash",
                    {"command": "rg -l \"from 'echarts'\" src"},
                    "src/pages/product/PriceHistory.tsx\nsrc/pages/admin/Dashboard.tsx",
                ),
                Call(
                    "Read",
                    {"file_path": "/web/src/pages/product/PriceHistory.tsx"},
                    source(411, 12),
                ),
            ),
            A(
                "The regression comes from PriceHistory pulling the whole echarts build into the product page's first load."
            ),
            U("don't remove the price history chart, sales needs it. and no new dependencies."),
            A(
                "Decision: lazy-load PriceHistory with React.lazy so echarts leaves the critical path, because the chart sits below the fold anyway.",
                Call(
                    "Edit",
                    {
                        "file_path": "/web/src/pages/product/ProductPage.tsx",
                        "old_string": "x",
                        "new_string": "y",
                    },
                    "The file /web/src/pages/product/ProductPage.tsx has been updated.",
                ),
            ),
            A(
                chatter(42),
                Call(
                    "Bash",
                    {
                        "command": "npm run build && npx lighthouse http://localhost:4173/product/42 --only-categories=performance --quiet --output=json | jq '.audits[\"largest-contentful-paint\"].displayValue'"
                    },
                    log(412, 25, "vite") + '\n"2.1 s"',
                ),
            ),
            A("LCP is down to 2.1 s."),
            A(
                "Image sizes.",
                Call(
                    "Bash",
                    {"command": "ls -l public/img/product | sort -k5 -rn | head -3"},
                    listing(413, 3, "public/img/product")
                    + "\n-rw-r--r-- 1 dev dev 2411520 May 2 hero-42.png",
                ),
            ),
            A(
                "hero-42.png is 2411520 bytes; converting it to WebP would take it under the 200 KB limit in the image guidelines."
            ),
            U(
                "Ask Aiko before converting, she may want a different crop. Ship the lazy-load today."
            ),
        ],
        [
            Fact("person", ("Aiko", "design"), "person with role"),
            Fact("tool_output", ("4.8 s",), "LCP before"),
            Fact("tool_output", ("0.41",), "score"),
            Fact("tool_output", ("812344",), "chunk size"),
            Fact("conclusion", ("PriceHistory", "echarts"), "root cause"),
            Fact("constraint", ("price history",), "keep the chart"),
            Fact("constraint", ("new dependencies",), "no new deps"),
            Fact("decision", ("lazy", "below the fold"), "lazy-load and why"),
            Fact("path", ("ProductPage.tsx",), "edited"),
            Fact("number", ("2.1 s",), "LCP after"),
            Fact("number", ("2411520",), "image size"),
            Fact("number", ("200 KB",), "image limit"),
        ],
    ),
]
