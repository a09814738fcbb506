# ruff: noqa: E501  (scripted session data: long tool outputs read better unwrapped)
"""Set L: held out (written before it was measured; only its totals are read).

Five domains no other set uses: a flaky Playwright end-to-end suite in a clinic booking web app,
a Python C-extension whose wheels break on NumPy 2 (an ABI mismatch), a WebSocket reconnect
storm after every load-balancer reload, an Ansible sshd hardening rollout that locked the fleet
out of legacy hosts and transactional email landing in spam after a DKIM key rotation. Each
session is long (24-35k tokens by the len/3 estimate): outputs of 50-300 lines (flake reports,
Playwright runs, network traces, CI job tables, cibuildwheel logs, import matrices, Prometheus
ranges, HAProxy configs, socket logs, Ansible recaps, fact tables, journal excerpts, DMARC
aggregate rows, dig answers, SPF trees, mail logs, git logs, test runs) with the planted value
among many values of its shape, several files a turn, Claude Code shapes (Bash, Read, Edit,
MultiEdit, Write, Grep, Glob) and Codex shapes (shell argv with both output envelopes,
apply_patch). Some values live only in a tool output; some numbers are said once in passing. A
value restated then corrected keeps only the correction as the needle; a value later superseded
keeps only the later one. Reasons, limits and roles are stated in prose, once.
"""

from __future__ import annotations

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
    written,
)

# -- shared shapes -----------------------------------------------------------------------------


def _git_log(
    seed: int, count: int, authors: list[str], subjects: list[str], planted: dict[float, str]
) -> str:
    """`git log --format='%h %an %ad %s' --date=short`."""
    rng = random.Random(seed)
    lines = []
    for i in range(count):
        day = f"2026-{11 - i * 4 // count:02d}-{27 - i % 26:02d}"
        subject = rng.choice(subjects).format(n=rng.randint(100, 990))
        lines.append(f"{short_hash(rng, 9)} {rng.choice(authors):<17} {day} {subject}")
    return bury(lines, planted)


def _pytest(seed: int, count: int, modules: list[str], words: list[str], summary: str) -> str:
    rng = random.Random(seed)
    lines = ["============================= test session starts ==============================="]
    for i in range(count):
        name = "_".join(rng.choice(words) for _ in range(3))
        lines.append(
            f"{rng.choice(modules)}::test_{name}_{i} PASSED{' ' * 8}[{100 * (i + 1) // count:3d}%]"
        )
    lines.append(summary)
    return "\n".join(lines)


def _vitest(seed: int, count: int, files: list[str], words: list[str], summary: str) -> str:
    rng = random.Random(seed)
    lines = []
    for i in range(count):
        if i % 15 == 0:
            lines.append(
                f" ✓ {rng.choice(files)} ({rng.randint(4, 40)} tests) {rng.randint(20, 900)}ms"
            )
        lines.append(f"   ✓ {' '.join(rng.choice(words) for _ in range(4))} {rng.randint(1, 60)}ms")
    lines.append(summary)
    return "\n".join(lines)


# -- l1: a flaky Playwright end-to-end suite -------------------------------------------------

_WEB = "/home/dev/clinic-booking-web"
_AREAS = {
    "booking": ["create", "reschedule", "cancel", "waitlist", "recurring", "deposit"],
    "patients": ["register", "profile", "consent", "documents", "merge"],
    "clinicians": ["calendar", "availability", "leave", "rota"],
    "payments": ["card", "invoice", "refund", "insurance"],
    "admin": ["locations", "rooms", "reports", "audit", "roles"],
    "auth": ["login", "mfa", "reset", "sso"],
}
_VERBS = [
    "shows",
    "saves",
    "rejects",
    "moves",
    "lists",
    "filters",
    "exports",
    "updates",
    "restores",
    "sends",
]
_NOUNS = [
    "the appointment",
    "the slot grid",
    "a reminder",
    "the invoice",
    "the patient card",
    "an error banner",
    "the calendar week",
    "the deposit",
    "the audit row",
    "a consent form",
]


def _spec(rng: random.Random) -> tuple[str, str]:
    area = rng.choice(sorted(_AREAS))
    name = rng.choice(_AREAS[area])
    title = f"{name} {rng.choice(_VERBS)} {rng.choice(_NOUNS)}"
    return f"tests/e2e/{area}/{name}.spec.ts:{rng.randint(12, 240)}", title


def _flake_report(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    head = [
        "flake report: last 412 runs of workflow e2e.yml on main and PR branches (2026-11-09 .. 2026-12-06)",
        f"{'spec':<48} {'test':<42} {'runs':>5} {'failed':>6} {'rate':>7}",
        "-" * 112,
    ]
    rows = []
    for _ in range(110):
        spec, title = _spec(rng)
        failed = rng.choice([0, 0, 0, 0, 1, 1, 2, 3, 4, 6, 9])
        rows.append(f"{spec:<48} {title:<42} {412:>5} {failed:>6} {100 * failed / 412:>6.2f}%")
    tail = [
        "-" * 112,
        "runs with at least one failed test: 71 of 412 (17.23%); runs green on first attempt: 341",
    ]
    return "\n".join(head) + "\n" + bury(rows, planted) + "\n" + "\n".join(tail)


def _pw_run(
    seed: int, count: int, planted: dict[float, str], summary: str, tail_of: int = 0
) -> str:
    """Playwright's list reporter; with tail_of, only the last `count` lines of a longer run."""
    rng = random.Random(seed)
    start = tail_of - count if tail_of else 0
    lines = [] if tail_of else [f"Running {count + len(planted)} tests using 4 workers", ""]
    for i in range(start, start + count):
        spec, title = _spec(rng)
        lines.append(
            f"  ✓ {i + 1:>4} [chromium] › {spec.removeprefix('tests/e2e/')}:{rng.randint(3, 9)} › {title} ({rng.uniform(0.8, 14):.1f}s)"
        )
    return bury(lines, planted) + "\n\n" + summary


def _trace_network(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    calls = [
        "GET /api/clinicians/dr-seed-01/slots?date=2026-12-21",
        "GET /api/patients/me",
        "GET /api/locations/lis-01/rooms",
        "GET /_next/static/chunks/pages/booking-5f1c.js",
        "GET /api/appointments?patient=pat_test_w{w}",
        "POST /api/telemetry/web-vitals",
        "GET /api/feature-flags",
        "GET /_next/data/build-2291/booking/reschedule.json",
    ]
    lines = [
        "# trace.zip network log, worker 1, test 'reschedule moves the appointment' (retry #0)"
    ]
    for i in range(120):
        call = rng.choice(calls).format(w=rng.randint(0, 3))
        lines.append(
            f"12:04:{i * 37 // 100:02d}.{rng.randint(100, 999)}  {call:<64} {rng.choice([200, 200, 200, 304])}  {rng.randint(4, 240)}ms"
        )
    return bury(lines, planted)


_PW_CONFIG = """import { defineConfig, devices } from '@playwright/test';

const CI = !!process.env.CI;

export default defineConfig({
  testDir: './tests/e2e',
  timeout: 45_000,
  expect: { timeout: 10_000 },
  fullyParallel: true,
  forbidOnly: CI,
  retries: 0, // flakes must be fixed, not retried (QA policy)
  workers: CI ? 4 : undefined,
  reporter: CI ? [['list'], ['blob'], ['github']] : 'list',
  globalSetup: './tests/e2e/global-setup.ts',
  use: {
    baseURL: process.env.E2E_BASE_URL ?? 'http://localhost:3000',
    trace: 'retain-on-failure',
    video: 'off',
    actionTimeout: 8_000,
    timezoneId: 'Europe/Lisbon',
    locale: 'pt-PT',
  },
  projects: [
    { name: 'setup', testMatch: /global\\.setup\\.ts/ },
    { name: 'chromium', use: { ...devices['Desktop Chrome'] }, dependencies: ['setup'] },
  ],
  webServer: {
    command: 'pnpm start:e2e',
    url: 'http://localhost:3000/api/health',
    reuseExistingServer: !CI,
    timeout: 120_000,
  },
});
"""

_RESCHEDULE_SPEC = """import { test, expect } from '../fixtures';
import { bookSlot, openAppointment } from '../helpers/booking';

const CLINICIAN = 'dr-seed-01';

test.describe('reschedule', () => {
  test.beforeEach(async ({ page, patient }) => {
    await patient.login(page);
    await bookSlot(page, { clinician: CLINICIAN, date: '2026-12-21', time: '09:30' });
  });

  test('reschedule shows the slot grid', async ({ page }) => {
    await openAppointment(page, { clinician: CLINICIAN });
    await page.getByRole('button', { name: 'Reschedule' }).click();
    await expect(page.getByTestId('slot-grid')).toBeVisible();
  });

  test('reschedule rejects a past slot', async ({ page }) => {
    await openAppointment(page, { clinician: CLINICIAN });
    await page.getByRole('button', { name: 'Reschedule' }).click();
    await page.getByTestId('week-prev').click();
    await expect(page.getByTestId('slot-09:30')).toBeDisabled();
  });

  test('reschedule moves the appointment', async ({ page }) => {
    await openAppointment(page, { clinician: CLINICIAN });
    await page.getByRole('button', { name: 'Reschedule' }).click();
    await page.getByTestId('slot-11:00').click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await expect(page.getByText('Appointment moved')).toBeVisible();
    await expect(page.getByTestId('appointment-time')).toHaveText('11:00');
  });
});
"""

_FIXTURES_INDEX = """import { test as base } from '@playwright/test';
import { PatientSession } from './patient';

type Fixtures = { patient: PatientSession };

export const test = base.extend<Fixtures>({
  patient: async ({ request }, use, testInfo) => {
    const session = await PatientSession.create(request, { tag: testInfo.titlePath.join(' / ') });
    await use(session);
    await session.cleanup();
  },
});

export { expect } from '@playwright/test';
"""


def _seed_ts(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "// prisma/seed.ts: shared by local dev, e2e and the staging reset job",
        "import { PrismaClient } from '@prisma/client';",
        "const prisma = new PrismaClient();",
        "",
        "async function main() {",
    ]
    for i in range(1, 26):
        lines.append(
            f"  await prisma.clinician.upsert({{ where: {{ slug: 'dr-seed-{i:02d}' }}, update: {{}}, create: {{ slug: 'dr-seed-{i:02d}', name: 'Seed Clinician {i}', locationId: 'lis-{rng.randint(1, 4):02d}', slotMinutes: {rng.choice([15, 20, 30])} }} }});"
        )
    lines += ["}", "", "main().finally(() => prisma.$disconnect());"]
    return "\n".join(lines)


def _grep_seed(seed: int) -> str:
    rng = random.Random(seed)
    lines = []
    for _ in range(58):
        spec, _title = _spec(rng)
        path = spec.rsplit(":", 1)[0]
        lines.append(
            f"{_WEB}/{path}:{rng.randint(3, 20)}:const CLINICIAN = 'dr-seed-{rng.choice(['01', '01', '01', '02', '07'])}';"
        )
    return "\n".join(sorted(set(lines)))


def _gh_jobs(seed: int) -> str:
    rng = random.Random(seed)
    lines = [f"{'run':<10} {'branch':<34} {'job':<16} {'conclusion':<10} {'duration':>9}"]
    branches = [
        "main",
        "feat/waitlist-sms",
        "fix/invoice-rounding",
        "chore/deps-week-48",
        "feat/insurance-preauth",
    ]
    for i in range(38):
        run = 88175 + i
        branch = rng.choice(branches)
        for job, lo, hi in (("lint", 40, 90), ("unit", 120, 260), ("e2e (install)", 480, 560)):
            secs = rng.randint(lo, hi)
            lines.append(
                f"{run:<10} {branch:<34} {job:<16} {'success':<10} {secs // 60:>5}m{secs % 60:02d}s"
            )
        secs = rng.randint(560, 700)
        lines.append(
            f"{run:<10} {branch:<34} {'e2e':<16} {rng.choice(['success', 'success', 'failure']):<10} {secs // 60:>5}m{secs % 60:02d}s"
        )
    lines.append("")
    lines.append(
        "gh run view 88213 --json jobs: lint 1m02s | unit 3m11s | e2e (install) 9m02s | e2e 10m41s"
    )
    return "\n".join(lines)


_L1_FACTS = [
    Fact("person", ("Priya Raman", "QA lead"), "QA lead who owns the e2e suite"),
    Fact("person", ("Tomasz Nowak", "CI runners"), "platform engineer who runs the CI runners"),
    Fact("number", ("1,460",), "size of the e2e suite, said once in passing"),
    Fact("number", ("16:20",), "when the flakes started, said once"),
    Fact("tool_output", ("8.98%",), "flake rate of the reschedule test in the flake report"),
    Fact("tool_output", ("7c41e9b0d",), "commit that turned on fullyParallel"),
    Fact("conclusion", ("same slot",), "parallel workers book the same seeded slot: 409"),
    Fact("conclusion", ("toast",), "second cause: the toast overlay intercepts the click"),
    Fact("constraint", ("12 minutes",), "the e2e job must stay under 12 minutes"),
    Fact("constraint", ("prisma/seed.ts",), "the shared seed may not be changed"),
    Fact("decision", ("workerIndex",), "one clinician per worker keyed on workerIndex, not serial"),
    Fact("path", ("tests/e2e/fixtures/workerClinician.ts",), "fixture module, the later path"),
    Fact("number", ("10m41s",), "e2e job duration, the corrected value"),
]

L1 = Session(
    "l1-playwright-flaky-e2e",
    [
        U(
            f"Our Playwright suite in {_WEB} has gone flaky on CI: roughly one run in six goes red and a re-run goes green. It's about 1,460 specs across chromium only. Priya Raman, our QA lead, owns the e2e suite and she's had enough of people clicking re-run. The first red runs showed up on the 4th around 16:20. Can you find what's flaking and why?"
        ),
        A(
            "I'll start from the numbers: the repo has a flake report script over past CI runs, and I'll pull the recent history alongside it.",
            Call(
                "Bash",
                {
                    "command": "node scripts/flake-report.mjs --workflow e2e.yml --runs 412 --sort spec",
                    "description": "Per-test failure rates over the last 412 CI runs",
                },
                _flake_report(
                    2101,
                    {
                        0.37: f"{'tests/e2e/booking/reschedule.spec.ts:25':<48} {'reschedule moves the appointment':<42} {412:>5} {37:>6} {8.98:>6.2f}%",
                        0.71: f"{'tests/e2e/booking/create.spec.ts:54':<48} {'create saves the appointment':<42} {412:>5} {19:>6} {4.61:>6.2f}%",
                    },
                ),
            ),
            Call(
                "Bash",
                {
                    "command": "git log --format='%h %an %ad %s' --date=short -n 100",
                    "description": "Recent commits",
                },
                _git_log(
                    2102,
                    80,
                    ["Priya Raman", "João Carvalho", "Hana Kobayashi", "renovate[bot]"],
                    [
                        "feat(booking): waitlist tweak #{n}",
                        "fix(payments): invoice rounding {n}",
                        "test(e2e): cover case {n}",
                        "chore(deps): update playwright to 1.4{n}",
                        "refactor(ui): slot grid step {n}",
                        "docs: runbook {n}",
                    ],
                    {},
                ),
            ),
        ),
        A(
            "Two booking tests stand out: `reschedule moves the appointment` fails far more often than anything else, and `create saves the appointment` is second. Most of the other rows are zero or one failure in 412. Both top tests book a slot for a clinician. Let me look at the spec, the config and the fixtures together.",
            Call("Read", {"file_path": f"{_WEB}/playwright.config.ts"}, numbered(_PW_CONFIG)),
            Call(
                "Read",
                {"file_path": f"{_WEB}/tests/e2e/booking/reschedule.spec.ts"},
                numbered(_RESCHEDULE_SPEC),
            ),
            Call(
                "Read",
                {"file_path": f"{_WEB}/tests/e2e/fixtures/index.ts"},
                numbered(_FIXTURES_INDEX),
            ),
        ),
        A(
            "Every reschedule test books dr-seed-01 on 2026-12-21 at 09:30, and the config runs files fully in parallel on 4 workers. Let me check when fullyParallel came in and who else uses that clinician.",
            Call(
                "Bash",
                {
                    "command": "git log -S fullyParallel --format='%h %an %ad %s' --date=iso -- playwright.config.ts",
                    "description": "When fullyParallel was turned on",
                },
                "7c41e9b0d Hana Kobayashi 2026-12-04 15:58:12 +0000 ci(e2e): run tests in files in parallel to cut the e2e job\n3f0a6c2e1 Priya Raman    2026-06-11 10:02:44 +0100 test(e2e): playwright config for chromium only\n",
            ),
            Call(
                "Grep",
                {
                    "pattern": "dr-seed-0",
                    "path": f"{_WEB}/tests/e2e",
                    "output_mode": "content",
                    "-n": True,
                },
                _grep_seed(2103),
            ),
        ),
        A(
            "Reproducing locally with the CI worker count and repeats, so the race has a chance to show.",
            Call(
                "Bash",
                {
                    "command": "CI=1 npx playwright test tests/e2e/booking --repeat-each 8 --workers 4 --reporter list",
                    "description": "Booking specs, 8 repeats, 4 workers",
                },
                _pw_run(
                    2104,
                    148,
                    {
                        0.52: '  ✘   95 [chromium] › booking/reschedule.spec.ts:25:7 › reschedule moves the appointment (11.2s)\n\n    Error: expect(received).toHaveText(expected)\n    Expected string: "11:00"\n    Received string: "09:30"\n    Call log:\n      - expect.toHaveText with timeout 10000ms\n      - waiting for getByTestId(\'appointment-time\')\n      -   locator resolved to <span data-testid="appointment-time">09:30</span>',
                        0.81: '  ✘  149 [chromium] › booking/create.spec.ts:54:7 › create saves the appointment (8.4s)\n\n    Error: locator.click: Timeout 8000ms exceeded.\n    Call log:\n      - waiting for getByRole(\'button\', { name: \'Confirm\' })\n      -   locator resolved to <button type="submit" class="btn-primary">Confirm</button>\n      - attempting click action\n      -   <div role="status" class="toast toast--info">Your reminder preferences were saved</div> intercepts pointer events\n      - retrying click action, attempt #14',
                    },
                    "  2 failed\n    [chromium] › booking/reschedule.spec.ts:25:7 › reschedule moves the appointment\n    [chromium] › booking/create.spec.ts:54:7 › create saves the appointment\n  148 passed (3.9m)",
                ),
            ),
        ),
        A(
            "Both failures reproduced. Opening the trace of the reschedule failure to see the API calls.",
            Call(
                "Bash",
                {
                    "command": "npx playwright show-trace --export-network test-results/booking-reschedule-moves-the-appointment-chromium/trace.zip",
                    "description": "Network log from the failing trace",
                },
                _trace_network(
                    2105,
                    {
                        0.64: '12:04:23.551  POST /api/appointments/apt_7Hq2/reschedule {"slot":"2026-12-21T11:00"}   409  31ms  {"error":"slot_taken","heldBy":"apt_9Zk4","clinician":"dr-seed-01"}',
                    },
                ),
            ),
        ),
        A(
            "That explains the first one. Since fullyParallel landed, tests from different files run at the same time on four workers, and they all book dr-seed-01. Another worker's test grabbed the same slot at 11:00 a moment earlier, so the reschedule got a 409 and the page kept showing 09:30. The seed has one clinician with one calendar, and the parallel workers race for the same slot. The second failure is different: a toast that create.spec triggers when reminder preferences save sits over the Confirm button, and the click is intercepted until it fades, which sometimes takes longer than the 8 second action timeout."
        ),
        U(
            "Makes sense. Limits: the e2e job has to stay under 12 minutes, that's what the branch protection timeout allows and Tomasz Nowak, who runs the CI runners on the platform team, won't raise it. And you can't touch prisma/seed.ts, staging's nightly reset job and local dev both depend on it. Priya also said no retries."
        ),
        A(
            "Noted: under 12 minutes, seed untouched, retries stay at 0. Checking how long the e2e job takes now so I know the headroom.",
            Call(
                "Bash",
                {
                    "command": "gh run list --workflow e2e.yml -L 38 --json databaseId,headBranch,jobs | node scripts/jobs-table.mjs",
                    "description": "Job durations for the last 38 runs",
                },
                _gh_jobs(2106),
            ),
            Call(
                "Read",
                {"file_path": f"{_WEB}/prisma/seed.ts", "limit": 60},
                numbered(_seed_ts(2107)),
            ),
        ),
        A(
            "The e2e job takes about nine minutes, so there's around three minutes of headroom. Actually, I misread the row: 9m02s is the `e2e (install)` job that only installs browsers. The e2e job itself took 10m41s in run 88213, so there's well under a minute and a half of room under the 12 minutes."
        ),
        U("So serial mode for the booking files is out? What would you do instead?"),
        A(
            "Serial mode is out: running the booking folder serially adds about four minutes by the per-test timings, which breaks the 12 minute limit. Instead each worker gets its own clinician, created through the API in a worker-scoped fixture keyed on testInfo.workerIndex, so no two workers ever share a calendar and prisma/seed.ts stays as it is. For the toast, the create test waits for it to be hidden before clicking Confirm, rather than raising timeouts.",
            Call(
                "Write",
                {
                    "file_path": f"{_WEB}/tests/e2e/fixtures/clinician.ts",
                    "content": "import type { APIRequestContext, WorkerInfo } from '@playwright/test';\n\n// one clinician per worker: parallel workers must never share a calendar\nexport async function createWorkerClinician(request: APIRequestContext, workerInfo: WorkerInfo) {\n  const slug = `dr-e2e-w${workerInfo.workerIndex}-${Date.now().toString(36)}`;\n  const res = await request.post('/api/test-support/clinicians', { data: { slug, locationId: 'lis-01', slotMinutes: 30 } });\n  if (!res.ok()) throw new Error(`could not create ${slug}: ${res.status()}`);\n  return { slug, cleanup: () => request.delete(`/api/test-support/clinicians/${slug}`) };\n}\n",
                },
                written(f"{_WEB}/tests/e2e/fixtures/clinician.ts"),
            ),
            Call(
                "Edit",
                {
                    "file_path": f"{_WEB}/tests/e2e/fixtures/index.ts",
                    "old_string": "type Fixtures = { patient: PatientSession };",
                    "new_string": "type Fixtures = { patient: PatientSession };\ntype WorkerFixtures = { clinician: string };",
                },
                edited(
                    f"{_WEB}/tests/e2e/fixtures/index.ts",
                    "type Fixtures = { patient: PatientSession };\ntype WorkerFixtures = { clinician: string };",
                    4,
                ),
            ),
        ),
        U(
            "Priya's lint rule wants fixture files named after what they provide, and she'd rather it be one file per fixture. Can you rename it?"
        ),
        A(
            "Moving it to tests/e2e/fixtures/workerClinician.ts and updating the imports and the specs that hard-code dr-seed-01.",
            Call(
                "Bash",
                {
                    "command": "git mv tests/e2e/fixtures/clinician.ts tests/e2e/fixtures/workerClinician.ts && git status --short",
                    "description": "Rename the fixture module",
                },
                "R  tests/e2e/fixtures/clinician.ts -> tests/e2e/fixtures/workerClinician.ts\n M tests/e2e/fixtures/index.ts",
            ),
            Call(
                "MultiEdit",
                {
                    "file_path": f"{_WEB}/tests/e2e/booking/reschedule.spec.ts",
                    "edits": [
                        {"old_string": "const CLINICIAN = 'dr-seed-01';\n\n", "new_string": ""},
                        {
                            "old_string": "  test.beforeEach(async ({ page, patient }) => {",
                            "new_string": "  test.beforeEach(async ({ page, patient, clinician }) => {",
                        },
                        {
                            "old_string": "    await bookSlot(page, { clinician: CLINICIAN, date: '2026-12-21', time: '09:30' });",
                            "new_string": "    await bookSlot(page, { clinician, date: '2026-12-21', time: '09:30' });",
                        },
                    ],
                },
                edited(
                    f"{_WEB}/tests/e2e/booking/reschedule.spec.ts",
                    "test.describe('reschedule', () => {\n  test.beforeEach(async ({ page, patient, clinician }) => {\n    await patient.login(page);\n    await bookSlot(page, { clinician, date: '2026-12-21', time: '09:30' });\n  });",
                    4,
                ),
            ),
            Call(
                "Edit",
                {
                    "file_path": f"{_WEB}/tests/e2e/booking/create.spec.ts",
                    "old_string": "    await page.getByRole('button', { name: 'Confirm' }).click();",
                    "new_string": "    await expect(page.getByRole('status')).toBeHidden();\n    await page.getByRole('button', { name: 'Confirm' }).click();",
                },
                edited(
                    f"{_WEB}/tests/e2e/booking/create.spec.ts",
                    "    await page.getByTestId('reminder-sms').check();\n    await expect(page.getByRole('status')).toBeHidden();\n    await page.getByRole('button', { name: 'Confirm' }).click();",
                    55,
                ),
            ),
        ),
        A(
            "Running the booking folder again with the same stress settings, then the full suite the way CI does.",
            Call(
                "Bash",
                {
                    "command": "CI=1 npx playwright test tests/e2e/booking --repeat-each 8 --workers 4 --reporter list | tail -n 100",
                    "description": "Booking specs, 8 repeats, after the fix",
                },
                _pw_run(2108, 100, {}, "  148 passed (3.8m)", tail_of=148),
            ),
            Call(
                "Bash",
                {
                    "command": "CI=1 npx playwright test --reporter list 2>&1 | tail -n 92",
                    "description": "Full suite as CI runs it",
                },
                _pw_run(2109, 90, {}, "  1460 passed (10.4m)", tail_of=1460),
            ),
        ),
        A(
            "Booking is green across the stressed runs and the whole suite passes in about ten and a half minutes, inside the limit. Summary: the flakes came from fullyParallel (commit 7c41e9b0d) making workers book the same slot for the one seeded clinician, plus a toast covering Confirm in create.spec. Each worker now gets its own clinician from tests/e2e/fixtures/workerClinician.ts, keyed on workerIndex; prisma/seed.ts and retries are unchanged."
        ),
    ],
    _L1_FACTS,
)


# -- l2: a C-extension whose wheels break on NumPy 2 ---------------------------------------------

_PKG = "/home/dev/quadkit"
_PYS = ["cp39", "cp310", "cp311", "cp312", "cp313"]
_PLATS = [
    "manylinux_2_17_x86_64.manylinux2014_x86_64",
    "manylinux_2_17_aarch64.manylinux2014_aarch64",
    "musllinux_1_2_x86_64",
    "macosx_10_9_x86_64",
    "macosx_11_0_arm64",
    "win_amd64",
]
_BUILT_AGAINST = {
    "cp39": "1.19.3",
    "cp310": "1.21.6",
    "cp311": "1.23.2",
    "cp312": "1.26.4",
    "cp313": "2.1.0",
}


def _cibw_log(seed: int, requirement: str, built_against: dict[str, str], version: str) -> str:
    """cibuildwheel's log for the linux x86_64 job, one block per interpreter."""
    rng = random.Random(seed)
    lines = [
        "cibuildwheel version 2.21.3",
        "Build options:",
        "  platform: linux",
        "  archs: x86_64",
        "  build_selector: cp39-* cp310-* cp311-* cp312-* cp313-*",
        "  build_frontend: build",
        "  manylinux_x86_64_image: quay.io/pypa/manylinux2014_x86_64:2024.11.16-1",
        "",
    ]
    for py in _PYS:
        tag = f"{py}-{py}"
        lines += [
            f"Building {tag}-manylinux_x86_64 wheel",
            f"CPython {py[2]}.{py[3:]} manylinux x86_64",
            "",
            "* Creating isolated environment: venv+pip...",
            "* Installing packages in isolated environment:",
            f"  - {requirement}",
            "  - setuptools>=64",
            "  - cython>=3.0.10",
            "  - wheel",
            f"Collecting {requirement}",
            f"  Downloading numpy-{built_against[py]}-{tag}-manylinux_2_17_x86_64.manylinux2014_x86_64.whl ({rng.uniform(13, 19):.1f} MB)",
            f"Successfully installed cython-3.0.11 numpy-{built_against[py]} setuptools-75.6.0 wheel-0.45.1",
            "* Getting build dependencies for wheel...",
            "* Building wheel...",
            "running bdist_wheel",
            "running build_ext",
        ]
        for mod in ["_tile", "_morton", "_bbox", "_polyfill", "_simplify", "_hilbert"]:
            lines.append(
                f"cythoning src/quadkit/{mod}.pyx to src/quadkit/{mod}.c"
                if rng.random() < 0.5
                else f"building 'quadkit.{mod}' extension"
            )
            lines.append(
                f"gcc -pthread -Wno-unused-result -Wsign-compare -DNDEBUG -g -fwrapv -O3 -Wall -fPIC -DNPY_NO_DEPRECATED_API=NPY_1_7_API_VERSION -I/tmp/build-env-{short_hash(rng, 8)}/lib/python{py[2]}.{py[3:]}/site-packages/numpy/core/include -I/opt/python/{py}-{py}/include/python{py[2]}.{py[3:]} -c src/quadkit/{mod}.c -o build/temp.linux-x86_64-cpython-{py[2:]}/src/quadkit/{mod}.o"
            )
            lines.append(
                f"gcc -pthread -shared build/temp.linux-x86_64-cpython-{py[2:]}/src/quadkit/{mod}.o -o build/lib.linux-x86_64-cpython-{py[2:]}/quadkit/{mod}.cpython-{py[2:]}-x86_64-linux-gnu.so"
            )
        lines += [
            f"Successfully built quadkit-{version}-{tag}-linux_x86_64.whl",
            f"Repairing wheel... auditwheel repair -w /tmp/cibw/repaired_wheel /tmp/cibw/built_wheel/quadkit-{version}-{tag}-linux_x86_64.whl",
            f"Fixed-up wheel written to /tmp/cibw/repaired_wheel/quadkit-{version}-{tag}-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
            f"Testing wheel... pytest {{project}}/tests -q -x  ({rng.randint(380, 420)} passed in {rng.uniform(6, 14):.2f}s)",
            f"✓ {tag}-manylinux_x86_64 finished in {rng.randint(40, 95)}s",
            "",
        ]
    return "\n".join(lines)


def _dist_listing(seed: int) -> str:
    rng = random.Random(seed)
    lines = []
    for py in _PYS:
        for plat in _PLATS:
            if py == "cp313" and plat.startswith("musllinux"):
                continue
            lines.append(
                f"-rw-r--r-- 1 runner docker {rng.randint(310_000, 1_900_000):>9} Dec  4 17:3{rng.randint(0, 9)} quadkit-4.2.0-{py}-{py}-{plat}.whl"
            )
    lines.append("-rw-r--r-- 1 runner docker   1912331 Dec  4 17:31 quadkit-4.2.0.tar.gz")
    return "\n".join(lines)


def _import_matrix(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    head = [
        "smoke: import quadkit and run quadkit.tile_of(52.37, 4.89, 14) in a fresh venv",
        f"{'python':<8} {'platform':<22} {'numpy':<8} {'quadkit':<8} result",
    ]
    rows = []
    numpies = ["1.24.4", "1.26.4", "2.0.2", "2.1.3", "2.2.0"]
    for py in ["3.9", "3.10", "3.11", "3.12", "3.13"]:
        for plat in [
            "linux-x86_64",
            "linux-aarch64",
            "macos-arm64",
            "macos-x86_64",
            "windows-amd64",
        ]:
            for np_version in numpies:
                if (py == "3.9" and np_version >= "2.1") or (py == "3.13" and np_version < "2.1"):
                    result = "skip (no numpy wheel)"
                elif np_version.startswith("2") and py != "3.13":
                    result = "FAIL ImportError: numpy.core.multiarray failed to import"
                else:
                    result = f"ok ({rng.uniform(0.1, 0.9):.2f}s)"
                rows.append(f"{py:<8} {plat:<22} {np_version:<8} {'4.2.0':<8} {result}")
    return "\n".join(head) + "\n" + bury(rows, planted)


def _traceback_log(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "$ pytest -q tests/ -p no:cacheprovider  (venv: python 3.12.7, numpy 2.1.3, quadkit 4.2.0 from PyPI)"
    ]
    for i in range(70):
        lines.append(
            f"tests/test_{rng.choice(['tile', 'morton', 'bbox', 'polyfill', 'hilbert'])}.py::test_{rng.choice(['roundtrip', 'edges', 'zoom', 'antimeridian', 'poles'])}_{i} ERROR"
        )
    lines += [
        "==================================== ERRORS ====================================",
        "_________________________ ERROR collecting tests/test_tile.py _________________________",
        "",
        "A module that was compiled using NumPy 1.x cannot be run in",
        "NumPy 2.1.3 as it may crash. To support both 1.x and 2.x",
        "versions of NumPy, modules must be compiled with NumPy 2.0.",
        "Some module may need to rebuild instead e.g. with 'pybind11>=2.12'.",
        "",
        'Traceback (most recent call last):  File "<frozen runpy>", line 198, in _run_module_as_main',
        '  File ".venv/lib/python3.12/site-packages/quadkit/__init__.py", line 7, in <module>',
        "    from ._tile import tile_of, tiles_in_bbox",
        '  File "src/quadkit/_tile.pyx", line 1, in init quadkit._tile',
        "RuntimeError: module compiled against ABI version 0x1000009 but this version of numpy is 0x2000000",
        "ImportError: numpy.core.multiarray failed to import",
        "=========================== short test summary info ============================",
    ]
    for _ in range(40):
        lines.append(
            f"ERROR tests/test_{rng.choice(['tile', 'morton', 'bbox', 'polyfill', 'hilbert'])}.py - ImportError: numpy.core.multiarray failed to import"
        )
    lines.append(
        "!!!!!!!!!!!!!!!!!!!! Interrupted: 41 errors during collection !!!!!!!!!!!!!!!!!!!!"
    )
    lines.append("41 errors in 1.82s")
    return "\n".join(lines)


_PYPROJECT = """[build-system]
requires = [
    "setuptools>=64",
    "cython>=3.0.10",
    "oldest-supported-numpy",
    "wheel",
]
build-backend = "setuptools.build_meta"

[project]
name = "quadkit"
dynamic = ["version"]
description = "Fast quadkey, Morton and Hilbert tile math for web maps"
readme = "README.md"
requires-python = ">=3.9"
license = { text = "BSD-3-Clause" }
dependencies = ["numpy>=1.19"]
classifiers = [
    "Programming Language :: Python :: 3.9",
    "Programming Language :: Python :: 3.10",
    "Programming Language :: Python :: 3.11",
    "Programming Language :: Python :: 3.12",
    "Programming Language :: Python :: 3.13",
    "Programming Language :: Cython",
]

[tool.setuptools_scm]
write_to = "src/quadkit/_version.py"

[tool.cibuildwheel]
build = "cp39-* cp310-* cp311-* cp312-* cp313-*"
skip = "pp* *-musllinux_i686 *-win32 cp313-musllinux*"
test-requires = ["pytest", "hypothesis"]
test-command = "pytest {project}/tests -q -x"

[tool.cibuildwheel.linux]
archs = ["x86_64", "aarch64"]
"""

_WHEELS_YML = """name: wheels
on:
  push:
    tags: ["v*"]
  workflow_dispatch:

jobs:
  build:
    name: ${{ matrix.os }}
    runs-on: ${{ matrix.os }}
    strategy:
      fail-fast: false
      matrix:
        os: [ubuntu-24.04, ubuntu-24.04-arm, macos-13, macos-14, windows-2022]
    steps:
      - uses: actions/checkout@v4
        with: { fetch-depth: 0 }
      - uses: pypa/cibuildwheel@v2.21.3
      - uses: actions/upload-artifact@v4
        with:
          name: wheels-${{ matrix.os }}
          path: wheelhouse/*.whl

  sdist:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v4
        with: { fetch-depth: 0 }
      - run: pipx run build --sdist
      - uses: actions/upload-artifact@v4
        with: { name: sdist, path: dist/*.tar.gz }

  publish:
    needs: [build, sdist]
    runs-on: ubuntu-24.04
    environment: pypi
    permissions: { id-token: write }
    steps:
      - uses: actions/download-artifact@v4
        with: { path: dist, merge-multiple: true }
      - uses: pypa/gh-action-pypi-publish@release/v1
"""


def _issues(seed: int) -> str:
    rng = random.Random(seed)
    titles = [
        "ImportError after upgrading to numpy 2 ({n})",
        "quadkit 4.2.0 fails to import on py3.12",
        "numpy.core.multiarray failed to import in Docker image ({n})",
        "tiles_in_bbox crashes on import with numpy {v}",
        "CI broke overnight: quadkit + numpy 2",
        "Feature request: polyfill with holes ({n})",
        "Docs: morton example uses old API",
        "Wheel for musllinux aarch64? ({n})",
    ]
    lines = []
    for i in range(60):
        title = rng.choice(titles).format(
            n=rng.randint(10, 99), v=rng.choice(["2.0.2", "2.1.3", "2.2.0"])
        )
        lines.append(
            f"#{1480 - i}\tOPEN\t{title}\t{rng.choice(['bug', 'bug', 'question', 'enhancement'])}\t{rng.randint(0, 31)} comments\t2026-12-0{rng.randint(4, 7)}"
        )
    return "\n".join(lines)


_L2_FACTS = [
    Fact("person", ("Halima Yusuf", "conda-forge"), "maintains the conda-forge feedstock"),
    Fact("person", ("Oskar Lindqvist", "PyPI"), "cuts releases, holds the PyPI publishing rights"),
    Fact("number", ("2,300",), "downloads a day, said once in passing"),
    Fact("number", ("17:45",), "when 4.2.0 went out, said once"),
    Fact(
        "tool_output",
        ("numpy-1.26.4",),
        "numpy the cp312 wheel was built against, in the build log",
    ),
    Fact("tool_output", ("0x1000009",), "ABI version in the import error"),
    Fact("conclusion", ("oldest-supported-numpy",), "the build requirement that pinned NumPy 1.x"),
    Fact("constraint", ("Python 3.9",), "3.9 support may not be dropped"),
    Fact("constraint", ("_tile.pxd",), "the cimported declarations may not change"),
    Fact("decision", ("numpy>=2.0",), "build against NumPy 2, whose builds run on 1.x too"),
    Fact("decision", ("4.2.2",), "release version, the later one"),
    Fact("path", ("ci/smoke_numpy_matrix.sh",), "the new smoke test script"),
    Fact("number", ("29 wheels",), "wheels in the release, the corrected count"),
]

L2 = Session(
    "l2-numpy2-wheel-abi",
    [
        U(
            f"quadkit ({_PKG}) is getting hammered with issues since 4.2.0: people on numpy 2 get an ImportError the moment they import it. 4.2.0 went out Friday at 17:45 and we do about 2,300 downloads a day, so this is spreading. Oskar Lindqvist cuts our releases and is the only one with PyPI publishing rights; Halima Yusuf maintains the conda-forge feedstock and says conda users are fine. Can you figure out what's wrong with the wheels?"
        ),
        A(
            "Let me look at the open issues and what 4.2.0 actually published.",
            Call(
                "shell",
                codex_shell("gh issue list --state open --limit 60", _PKG),
                codex_text(_issues(2201), seconds=1.1),
            ),
            Call(
                "shell",
                codex_shell("ls -l dist/ && ls dist/*.whl | wc -l", _PKG),
                codex_json(_dist_listing(2202) + "\n29", seconds=0.1),
            ),
        ),
        A(
            "The issues all say the same thing: import fails with numpy 2.x. The release is five interpreters on six platforms, so 30 wheels plus the sdist. Reproducing in a clean venv with numpy 2.1.3 and the wheel from PyPI.",
            Call(
                "shell",
                codex_shell(
                    "python3.12 -m venv /tmp/qk && /tmp/qk/bin/pip -q install 'numpy==2.1.3' 'quadkit==4.2.0' pytest hypothesis && /tmp/qk/bin/pytest -q tests/ -p no:cacheprovider",
                    _PKG,
                ),
                codex_text(_traceback_log(2203), code=2, seconds=21.7),
            ),
        ),
        A(
            "Reproduced: the extension was compiled against the NumPy 1.x ABI and NumPy 2 refuses to load it. Let me see what the build environment installed and what pyproject asks for.",
            Call(
                "shell",
                codex_shell("gh run view 12087741 --log --job 33876112 | sed -n '1,400p'", _PKG),
                codex_text(
                    _cibw_log(2204, "oldest-supported-numpy", _BUILT_AGAINST, "4.2.0"),
                    seconds=3.8,
                ),
            ),
            Call(
                "shell",
                codex_shell("cat pyproject.toml", _PKG),
                codex_json(_PYPROJECT, seconds=0.1),
            ),
            Call(
                "shell",
                codex_shell("cat .github/workflows/wheels.yml", _PKG),
                codex_json(_WHEELS_YML, seconds=0.1),
            ),
        ),
        A(
            "There it is. The build-system requires `oldest-supported-numpy`, which pins each interpreter to the oldest NumPy that has wheels for it. For 3.9 to 3.12 that is a 1.x release, so every one of those wheels was compiled against the 1.x C ABI, and NumPy 2 rejects modules built that way. cp313 only works because there is no 1.x NumPy for 3.13, so it got 2.1.0. NumPy's own guidance since 2.0 is the reverse: build against 2.x, and the result also runs on 1.x.",
        ),
        U(
            "Two constraints. We can't drop Python 3.9, there are still big users on RHEL 9 with the system python. And don't touch src/quadkit/_tile.pxd: two downstream packages cimport it, so its declarations are frozen until 5.0."
        ),
        A(
            "Both fine. NumPy 2.0.x still publishes wheels for 3.9, so `numpy>=2.0` in the build requirements covers every interpreter we ship, and the runtime dependency can stay `numpy>=1.19` because a module built against 2.x loads on 1.x too. Nothing in _tile.pxd changes: the fix is in the build requirements only. Checking the whole import matrix first so we know exactly which combinations break today.",
            Call(
                "shell",
                codex_shell("bash ci/smoke_local.sh --quadkit 4.2.0 --all", _PKG),
                codex_text(
                    _import_matrix(
                        2205,
                        {},
                    ),
                    seconds=412.5,
                ),
            ),
        ),
        A(
            "Every 3.9 to 3.12 build fails with NumPy 2.x on every platform and works with 1.x; 3.13 works everywhere. Switching the build requirement.",
            Call(
                "apply_patch",
                codex_patch(
                    "pyproject.toml",
                    '    "oldest-supported-numpy",',
                    '    "numpy>=2.0",  # built against 2.x, loads on 1.x too',
                    "requires = [",
                ),
                codex_patched("pyproject.toml"),
            ),
            Call(
                "shell",
                codex_shell(
                    'mkdir -p ci && cat > ci/smoke_numpy_matrix.sh <<\'EOF\'\n#!/usr/bin/env bash\n# import each built wheel under the oldest and newest NumPy it must work with\nset -euo pipefail\nfor whl in wheelhouse/*.whl; do\n  for np in 1.19.5 1.26.4 2.0.2 2.2.0; do\n    python ci/try_import.py "$whl" "$np" || exit 1\n  done\ndone\nEOF\nchmod +x ci/smoke_numpy_matrix.sh',
                    _PKG,
                ),
                codex_json("", seconds=0.1),
            ),
            Call(
                "apply_patch",
                codex_patch(
                    "pyproject.toml",
                    'test-command = "pytest {project}/tests -q -x"',
                    'test-command = "pytest {project}/tests -q -x && bash {project}/ci/smoke_numpy_matrix.sh"',
                    "[tool.cibuildwheel]",
                ),
                codex_patched("pyproject.toml"),
            ),
        ),
        A(
            "Rebuilding locally for linux x86_64 to check the fix before touching the release.",
            Call(
                "shell",
                codex_shell(
                    "CIBW_ARCHS=x86_64 cibuildwheel --platform linux --output-dir wheelhouse 2>&1",
                    _PKG,
                ),
                codex_text(
                    _cibw_log(
                        2207, "numpy>=2.0", dict.fromkeys(_PYS, "2.0.2"), "4.2.1.dev3+g8d41c2a"
                    )
                    + "\n5 wheels produced in 6 minutes",
                    seconds=371.2,
                ),
            ),
            Call(
                "shell",
                codex_shell("bash ci/smoke_local.sh --wheelhouse wheelhouse --all", _PKG),
                codex_text(
                    _import_matrix(2206, {}).replace(
                        "FAIL ImportError: numpy.core.multiarray failed to import", "ok (0.31s)"
                    ),
                    seconds=398.0,
                ),
            ),
        ),
        A(
            "All linux x86_64 wheels now import under every NumPy from 1.24 to 2.2. For the release: I said earlier that 4.2.0 shipped 30 wheels, but that was five interpreters times six platforms in my head; cp313 has no musllinux build (pyproject skips it), so the release to replace is 29 wheels plus the sdist. I'd publish them as 4.2.1.post1 so the version still says it's the same code.",
        ),
        U(
            "No post-release: Halima says the conda-forge bot mis-parses post versions and opens broken PRs. And Oskar already used 4.2.1 for a pure-python hotfix on a branch that never shipped, he'd rather not reuse it. Go with the next patch."
        ),
        A(
            "Then it's 4.2.2. Tagging it for Oskar and drafting the changelog entry; he triggers the publish job.",
            Call(
                "apply_patch",
                codex_patch(
                    "CHANGELOG.md",
                    "## 4.2.0 (2026-12-04)",
                    "## 4.2.2 (2026-12-07)\n\n- Wheels are built against NumPy 2 (build requirement `numpy>=2.0`), so they import under NumPy 1.x and 2.x. 4.2.0's wheels were built against 1.x and failed to import with NumPy 2.\n\n## 4.2.0 (2026-12-04)",
                    "# Changelog",
                ),
                codex_patched("CHANGELOG.md"),
            ),
            Call(
                "shell",
                codex_shell(
                    "git add -A && git commit -qm 'build: compile against numpy>=2.0; smoke matrix' && git tag -a v4.2.2 -m 'quadkit 4.2.2' && git log --oneline -n 3",
                    _PKG,
                ),
                codex_json(
                    "8d41c2a (HEAD -> main, tag: v4.2.2) build: compile against numpy>=2.0; smoke matrix\n5e0b9f3 docs: morton example\n41aa0c7 release 4.2.0",
                    seconds=0.3,
                ),
            ),
        ),
        A(
            "Tagged v4.2.2 at 8d41c2a; once Oskar pushes the tag, the wheels workflow builds all platforms and runs ci/smoke_numpy_matrix.sh against NumPy 1.19 through 2.2 before publishing. Python 3.9 wheels are still built and _tile.pxd is untouched."
        ),
    ],
    _L2_FACTS,
)


# -- l3: a WebSocket reconnect storm after every load-balancer reload ---------------------------

_RT = "/home/dev/inkboard"


def _prom_range(seed: int, metric: str, planted: dict[float, str]) -> str:
    """`promtool query range` output: one series, one sample every 5 seconds."""
    rng = random.Random(seed)
    lines = [f"{metric} =>"]
    base = 1796643600  # 2026-12-07 11:40:00Z
    for i in range(200):
        t = base + i * 5
        if 138 <= i <= 146:
            value = rng.randint(9000, 39000)
        elif 147 <= i <= 169:
            value = rng.randint(600, 6000)
        else:
            value = rng.randint(40, 420)
        lines.append(f"{value} @[{t}]")
    return bury(lines, planted)


def _haproxy_cfg(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "global",
        "    log /dev/log local0",
        "    maxconn 400000",
        "    nbthread 16",
        "    stats socket /run/haproxy/admin.sock mode 660 level admin expose-fd listeners",
        "    master-worker",
        "    hard-stop-after 30s",
        "    tune.ssl.default-dh-param 2048",
        "    ssl-default-bind-ciphersuites TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384",
        "",
        "defaults",
        "    mode http",
        "    log global",
        "    option httplog",
        "    timeout connect 5s",
        "    timeout client 60s",
        "    timeout server 60s",
        "    timeout tunnel 1h",
        "    timeout client-fin 10s",
        "",
        "frontend fe_inkboard",
        "    bind :443 ssl crt /etc/haproxy/certs/ alpn h2,http/1.1",
        "    acl is_ws hdr(Upgrade) -i websocket",
        "    acl is_rt path_beg /rt/",
        "    use_backend be_realtime if is_ws is_rt",
        "    default_backend be_web",
        "",
        "backend be_realtime",
        "    balance leastconn",
        "    option httpchk GET /healthz",
        "    http-check expect status 200",
    ]
    for i in range(48):
        lines.append(
            f"    server rt-{i:02d} 10.40.{rng.randint(1, 9)}.{rng.randint(10, 250)}:8080 check inter 2s fall 3 rise 2 maxconn {rng.choice([4000, 5000, 6000])}"
        )
    lines += ["", "backend be_web", "    balance roundrobin", "    option httpchk GET /api/health"]
    for i in range(36):
        lines.append(
            f"    server web-{i:02d} 10.40.{rng.randint(10, 19)}.{rng.randint(10, 250)}:3000 check inter 3s"
        )
    return "\n".join(lines)


def _conns_by_server(seed: int) -> str:
    """`show servers conn be_realtime` over the runtime socket, sampled every 20 seconds."""
    rng = random.Random(seed)
    lines = ["# time      server  used_cur  used_max  need_est  idle_cur  safe_cur"]
    for t in ["11:50:40", "11:51:00", "11:51:20", "11:51:40", "11:52:00"]:
        for i in range(0, 48, 2):
            used = rng.randint(1500, 1900) if t < "11:51:40" else rng.randint(0, 300)
            lines.append(
                f"  {t}  rt-{i:02d}   {used:>8}  {rng.randint(1900, 2400):>8}  {used + rng.randint(0, 90):>8}  {rng.randint(0, 40):>8}  {rng.randint(0, 12):>8}"
            )
    return "\n".join(lines)


def _socket_log(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    events = ["connect", "close", "auth_ok", "resume", "close", "connect"]
    codes = [1000, 1001, 1006, 1006, 1006]
    lines = []
    for i in range(150):
        ev = rng.choice(events)
        extra = (
            f',"code":{rng.choice(codes)}' if ev == "close" else f',"attempt":{rng.randint(1, 9)}'
        )
        lines.append(
            f'{{"ts":"2026-12-07T11:51:{i * 60 // 150:02d}.{rng.randint(100, 999)}Z","pod":"rt-{rng.randint(0, 47):02d}","event":"{ev}","board":"brd_{short_hash(rng, 6)}","client":"web/4.{rng.randint(0, 3)}.{rng.randint(0, 9)}"{extra}}}'
        )
    return bury(lines, planted)


_RECONNECT_TS = """import { EventEmitter } from './emitter';

export interface ReconnectOptions {
  baseDelay: number;
  maxDelay: number;
  factor: number;
}

const DEFAULTS: ReconnectOptions = { baseDelay: 250, maxDelay: 8000, factor: 2 };

export class ReconnectingSocket extends EventEmitter {
  private attempt = 0;
  private ws?: WebSocket;

  constructor(private url: string, private opts: ReconnectOptions = DEFAULTS) {
    super();
  }

  connect(): void {
    this.ws = new WebSocket(this.url);
    this.ws.onopen = () => {
      this.attempt = 0;
      this.emit('open');
    };
    this.ws.onclose = (ev) => {
      this.emit('close', ev.code);
      if (ev.code === 1000) return; // closed on purpose
      const delay = Math.min(this.opts.maxDelay, this.opts.baseDelay * this.opts.factor ** this.attempt);
      this.attempt += 1;
      setTimeout(() => this.connect(), delay);
    };
    this.ws.onmessage = (ev) => this.emit('message', ev.data);
  }
}
"""

_SERVER_SHUTDOWN_TS = """import { WebSocketServer } from 'ws';
import { logger } from './log';

export function installShutdown(wss: WebSocketServer): void {
  process.on('SIGTERM', () => {
    logger.info({ clients: wss.clients.size }, 'shutting down');
    for (const ws of wss.clients) ws.terminate();
    wss.close(() => process.exit(0));
  });
}
"""


def _auth_stats(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    head = [
        "time                  introspect_rps  rejected_total  p99_ms  pods_ready",
        "--------------------  --------------  --------------  ------  ----------",
    ]
    rows = []
    for i in range(120):
        minute = 30 + i // 6
        rows.append(
            f"2026-12-07 11:{minute:02d}:{(i % 6) * 10:02d}   {rng.randint(300, 1900):>14}  {rng.randint(0, 40):>14}  {rng.randint(18, 140):>6}  {rng.choice([6, 6, 6, 5]):>10}"
        )
    return "\n".join(head) + "\n" + bury(rows, planted)


def _grep_ws(seed: int) -> str:
    rng = random.Random(seed)
    files = [
        "packages/realtime/src/socket.ts",
        "packages/realtime/src/presence.ts",
        "packages/realtime/src/cursor.ts",
        "packages/web/src/board/useBoardChannel.ts",
        "packages/web/src/comments/useThread.ts",
        "packages/mobile-bridge/src/channel.ts",
        "packages/realtime/src/reconnect.ts",
    ]
    code = [
        "const sock = new ReconnectingSocket(url);",
        "sock.on('close', onClose);",
        "sock.connect();",
        "this.ws?.send(JSON.stringify(frame));",
        "if (ev.code === 1000) return;",
    ]
    lines = []
    for _ in range(52):
        lines.append(f"{_RT}/{rng.choice(files)}:{rng.randint(4, 220)}:    {rng.choice(code)}")
    return "\n".join(lines)


_L3_FACTS = [
    Fact("person", ("Lena Fischer", "client SDK"), "owns the client SDK"),
    Fact("person", ("Rafael Mendes", "network"), "network team, runs the HAProxy fleet"),
    Fact("number", ("86,000",), "concurrent sockets at peak, said once in passing"),
    Fact("number", ("11:52",), "time of the last storm, said once"),
    Fact("tool_output", ("41377",), "peak WebSocket upgrades per second in the Prometheus range"),
    Fact("tool_output", ("18204",), "auth introspections rejected at the peak"),
    Fact("tool_output", ("hard-stop-after 30s",), "the HAProxy setting that cuts old sockets"),
    Fact("conclusion", ("jitter",), "clients reconnect in lockstep: no jitter in the backoff"),
    Fact("constraint", ("@inkboard/realtime", "3.8"), "mobile apps pin the SDK at 3.8"),
    Fact("constraint", ("2,000",), "auth can take at most 2,000 introspections a second"),
    Fact("decision", ("full jitter",), "backoff with full jitter, so reconnects spread out"),
    Fact("decision", ("1012",), "close code sent on shutdown, the later one"),
    Fact("path", ("packages/realtime/src/backoff.ts",), "new backoff module"),
    Fact("number", ("2m40s",), "storm duration, the corrected value"),
]

L3 = Session(
    "l3-websocket-reconnect-storm",
    [
        U(
            f"Every time the network team reloads HAProxy, our realtime service for inkboard ({_RT}) falls over for a few minutes: boards freeze, presence goes blank, and the auth service starts shedding. We run roughly 86,000 concurrent sockets at peak. The last one was today at 11:52. Rafael Mendes from the network team runs the HAProxy fleet and says the reloads are routine, so it's on us. Can you look?"
        ),
        A(
            "I'll pull the upgrade rate around 11:52 from Prometheus and the socket server's logs from the same minute.",
            Call(
                "Bash",
                {
                    "command": 'promtool query range --start=2026-12-07T11:40:00Z --end=2026-12-07T11:56:35Z --step=5s http://prometheus.internal:9090 \'sum(rate(haproxy_backend_http_requests_total{backend="be_realtime",code="1xx"}[5s]))\'',
                    "description": "WebSocket upgrades per second around the reload",
                },
                _prom_range(2301, '{backend="be_realtime"}', {0.7: "41377 @[1796644315]"}),
            ),
            Call(
                "Bash",
                {
                    "command": "kubectl -n realtime logs -l app=rt --since-time=2026-12-07T11:51:00Z --tail=150 --prefix=false",
                    "description": "Socket server events at the reload",
                },
                _socket_log(
                    2302,
                    {
                        0.2: '{"ts":"2026-12-07T11:51:12.004Z","pod":"rt-17","event":"close","board":"brd_all","client":"*","code":1006,"count":5230,"note":"upstream reset"}'
                    },
                ),
            ),
        ),
        A(
            "The upgrade rate is flat in the low hundreds, then jumps by two orders of magnitude for a few samples and decays in waves. The socket logs show closes with code 1006, which means the TCP connection was cut without a close frame, and reconnect attempts with attempt numbers climbing together. Let me read the load balancer config and the client reconnect code.",
            Call(
                "Read",
                {"file_path": f"{_RT}/deploy/haproxy/haproxy.cfg"},
                numbered(_haproxy_cfg(2303)),
            ),
            Call(
                "Read",
                {"file_path": f"{_RT}/packages/realtime/src/reconnect.ts"},
                numbered(_RECONNECT_TS),
            ),
            Call(
                "Read",
                {"file_path": f"{_RT}/packages/server/src/shutdown.ts"},
                numbered(_SERVER_SHUTDOWN_TS),
            ),
            Call(
                "Bash",
                {
                    "command": "ssh lb-edge-03 \"sed -n '/11:50:40/,/11:52:00/p' /var/log/haproxy-sampler/conn-be_realtime-2026-12-07.log\"",
                    "description": "Per-server connection samples across the reload on lb-edge-03",
                },
                _conns_by_server(2307),
            ),
        ),
        A(
            "This is a classic thundering herd. On reload, the old HAProxy worker keeps its tunnels open but is killed by `hard-stop-after` 30 seconds later, which cuts every remaining socket at the same instant with no close frame. Every client then runs the same schedule: 250 ms, 500 ms, 1 s, 2 s... capped at 8 s, with no randomness at all. So tens of thousands of clients hit HAProxy, and through it the auth service, at exactly the same offsets. Because there's no jitter, the herd never spreads out; each wave fails a share of clients, which then retry together on the next step."
        ),
        U("How long does a storm last? And what does auth see?"),
        A(
            "Looking at the auth service's introspection stats over the same window.",
            Call(
                "Bash",
                {
                    "command": "psql \"$METRICS_RO\" -c \"SELECT * FROM auth_introspect_10s WHERE time BETWEEN '2026-12-07 11:30' AND '2026-12-07 11:50' ORDER BY time\" | head -n 130",
                    "description": "Auth introspection stats at 10 s resolution",
                },
                _auth_stats(
                    2304,
                    {
                        0.9: "2026-12-07 11:51:20            6140           18204    4870           2",
                    },
                ),
            ),
        ),
        A(
            "Auth peaked at about six thousand introspections a second at 11:51:20 and rejected most of them, with two pods still ready. From the first spike to the rate settling back, the storm lasted about 4 minutes."
        ),
        U(
            "Constraints from our side: auth can take at most 2,000 introspections a second, that's its rate limit and we're not scaling it for this. And the SDK has to stay compatible with what the mobile apps ship: they pin @inkboard/realtime 3.8, which we can't update until the next app store release. Lena Fischer owns the client SDK, she'll review."
        ),
        A(
            "Understood. Rechecking the duration with the Prometheus samples rather than eyeballing: the first sample above 1,000 is at 11:51:30 and the rate is back under 500 by 11:54:10, so the storm lasted 2m40s, not the 4 minutes I said. Finding every place the SDK reconnects.",
            Call(
                "Grep",
                {
                    "pattern": "ReconnectingSocket|sock\\.connect|onclose",
                    "path": f"{_RT}/packages",
                    "output_mode": "content",
                    "-n": True,
                },
                _grep_ws(2305),
            ),
            Call(
                "Glob",
                {"pattern": "packages/realtime/src/**/*.ts", "path": _RT},
                "\n".join(
                    f"{_RT}/packages/realtime/src/{n}.ts"
                    for n in [
                        "index",
                        "emitter",
                        "socket",
                        "reconnect",
                        "presence",
                        "cursor",
                        "frames",
                        "codec",
                        "auth",
                        "resume",
                    ]
                ),
            ),
        ),
        A(
            "Plan, for two sides. Client: exponential backoff with full jitter, where each delay is a uniform random value between 0 and the exponential cap, which spreads a herd of N clients evenly across the window instead of stacking them on the same offsets. Server: on SIGTERM, send a close frame with a custom code 4001 and a spread hint, then close sockets gradually instead of `terminate()`ing them all at once. Clients on 3.8 that don't know 4001 just treat it as an ordinary close and reconnect as today, so nothing breaks for them.",
            Call(
                "Write",
                {
                    "file_path": f"{_RT}/packages/realtime/src/backoff.ts",
                    "content": "// full jitter: a uniform delay in [0, cap] spreads a herd of clients evenly\nexport function backoffDelay(attempt: number, baseDelay = 500, maxDelay = 30_000, random = Math.random): number {\n  const cap = Math.min(maxDelay, baseDelay * 2 ** attempt);\n  return Math.floor(random() * cap);\n}\n",
                },
                written(f"{_RT}/packages/realtime/src/backoff.ts"),
            ),
            Call(
                "Edit",
                {
                    "file_path": f"{_RT}/packages/realtime/src/reconnect.ts",
                    "old_string": "      const delay = Math.min(this.opts.maxDelay, this.opts.baseDelay * this.opts.factor ** this.attempt);",
                    "new_string": "      const delay = backoffDelay(this.attempt, this.opts.baseDelay, this.opts.maxDelay);",
                },
                edited(
                    f"{_RT}/packages/realtime/src/reconnect.ts",
                    "      if (ev.code === 1000) return; // closed on purpose\n      const delay = backoffDelay(this.attempt, this.opts.baseDelay, this.opts.maxDelay);\n      this.attempt += 1;",
                    26,
                ),
            ),
        ),
        U(
            "Lena says don't invent a code: the 3.8 SDK already treats 1012 (Service Restart) as 'reconnect after a random delay up to 10 s', it's in the mobile build. Use that."
        ),
        A(
            "Better: then even the pinned 3.8 clients spread themselves out. Switching the server to close with 1012 and draining in batches.",
            Call(
                "Edit",
                {
                    "file_path": f"{_RT}/packages/server/src/shutdown.ts",
                    "old_string": "    for (const ws of wss.clients) ws.terminate();\n    wss.close(() => process.exit(0));",
                    "new_string": "    // 1012 Service Restart: SDKs from 3.8 reconnect after a random delay\n    drainInBatches(wss, { code: 1012, reason: 'restart', batch: 500, everyMs: 250 }).then(() =>\n      wss.close(() => process.exit(0)),\n    );",
                },
                edited(
                    f"{_RT}/packages/server/src/shutdown.ts",
                    "    logger.info({ clients: wss.clients.size }, 'shutting down');\n    // 1012 Service Restart: SDKs from 3.8 reconnect after a random delay\n    drainInBatches(wss, { code: 1012, reason: 'restart', batch: 500, everyMs: 250 }).then(() =>\n      wss.close(() => process.exit(0)),\n    );",
                    5,
                ),
            ),
            Call(
                "Bash",
                {
                    "command": "pnpm -r --filter @inkboard/realtime --filter @inkboard/server test -- --reporter verbose",
                    "description": "SDK and server tests",
                },
                _vitest(
                    2306,
                    190,
                    [
                        "src/backoff.test.ts",
                        "src/reconnect.test.ts",
                        "src/presence.test.ts",
                        "src/shutdown.test.ts",
                        "src/frames.test.ts",
                    ],
                    [
                        "reconnects",
                        "after",
                        "close",
                        "spreads",
                        "delay",
                        "presence",
                        "resumes",
                        "frame",
                        "drains",
                        "batch",
                    ],
                    " Test Files  23 passed (23)\n      Tests  311 passed (311)\n   Start at  12:48:09\n   Duration  14.27s",
                ),
            ),
        ),
        A(
            "Simulating a reload against staging with 20,000 synthetic clients to check the herd spreads.",
            Call(
                "Bash",
                {
                    "command": "node tools/herd-sim.mjs --clients 20000 --target wss://rt.staging.inkboard.dev/rt/ --reload-at 30s --duration 180s --report 1s",
                    "description": "Reload simulation on staging",
                },
                "\n".join(
                    f"t={i:>3}s  open={20000 - (137 if 31 <= i <= 40 else 0) * (i - 30 if 31 <= i <= 40 else 0):>6}  upgrades/s={(1900 + (i * 37) % 180) if 31 <= i <= 41 else (i * 13) % 40:>5}  auth_rps={(1400 + (i * 53) % 400) if 31 <= i <= 41 else (i * 17) % 60:>5}  auth_rejected=0"
                    for i in range(180)
                )
                + "\n\nsummary: peak upgrades/s 2079, peak auth rps 1797 (limit 2000), rejected 0, all 20000 clients reconnected by t=41s",
            ),
        ),
        A(
            "With 1012 plus batched draining, the simulated herd stays under the auth limit with nothing rejected, and every client is back within about ten seconds of the reload. The client side change (full jitter in packages/realtime/src/backoff.ts) ships in the next SDK minor; the 3.8 apps benefit already through their 1012 handling. I'll ask Rafael whether hard-stop-after can be raised so the drain always finishes before the old worker is killed."
        ),
    ],
    _L3_FACTS,
)


# -- l4: an Ansible sshd hardening rollout that locked the fleet out of legacy hosts ------------

_ANS = "/home/dev/infra-ansible"
_ROLES = ["web", "api", "worker", "cache", "db", "db-legacy", "kafka", "mon", "bastion", "build"]
_DCS = ["dc1", "dc2", "dc3"]


def _host(rng: random.Random) -> str:
    return f"{rng.choice(_ROLES)}-{rng.choice(_DCS)}-r{rng.randint(1, 24):02d}-{rng.randint(1, 40):02d}"


def _recap(seed: int) -> str:
    """scripts/recap.py over the JSON callback log: PLAY RECAP rows, then the totals."""
    rng = random.Random(seed)
    lines = ["PLAY RECAP (sample of 220 of 2870 hosts; --all for every host) " + "*" * 40]
    for _ in range(220):
        host = _host(rng)
        down = host.startswith("db-legacy") and rng.random() < 0.4
        changed = 0 if down else rng.choice([2, 3, 3, 4])
        lines.append(
            f"{host:<26}: ok={0 if down else changed + rng.randint(5, 9):<3} changed={changed:<3} unreachable={1 if down else 0:<3} failed=0    skipped={rng.randint(0, 4):<3} rescued=0    ignored=0"
        )
    lines += [
        "",
        "TOTAL hosts=2870 ok=2811 changed=2811 unreachable=59 failed=0 skipped=1204 rescued=0 ignored=0",
        "run: site.yml --tags sshd  started 2026-12-07T03:15:02Z  finished 2026-12-07T04:02:41Z  forks=50 serial=20%",
    ]
    return "\n".join(lines)


def _facts_table(seed: int) -> str:
    rng = random.Random(seed)
    versions = {
        ("Rocky", "9"): "OpenSSH_8.7p1",
        ("Ubuntu", "24.04"): "OpenSSH_9.6p1",
        ("Ubuntu", "22.04"): "OpenSSH_8.9p1",
        ("Debian", "12"): "OpenSSH_9.2p1",
        ("CentOS", "7"): "OpenSSH_7.4p1",
    }
    lines = [f"{'host':<26} {'distribution':<8} {'major':<6} {'ssh -V':<16} {'fact cache age'}"]
    for _ in range(210):
        host = _host(rng)
        if host.startswith("db-legacy") or rng.random() < 0.04:
            dist, major = "CentOS", "7"
        else:
            dist, major = rng.choice([k for k in versions if k[0] != "CentOS"])
        lines.append(
            f"{host:<26} {dist:<8} {major:<6} {versions[(dist, major)]:<16} {rng.randint(1, 9)}d"
        )
    lines.append("")
    lines.append(
        "counts: Rocky 9: 1490  Ubuntu 24.04: 702  Ubuntu 22.04: 388  Debian 12: 247  CentOS 7: 43"
    )
    return "\n".join(lines)


def _journal(seed: int) -> str:
    rng = random.Random(seed)
    lines = ["-- Logs begin at Mon 2026-11-30 09:12:40 UTC, end at Mon 2026-12-07 08:31:07 UTC. --"]
    for _ in range(110):
        lines.append(
            f"Dec 0{rng.randint(5, 7)} 0{rng.randint(0, 2)}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} db-legacy-dc2-r14-07 sshd[{rng.randint(1000, 30000)}]: Accepted publickey for {rng.choice(['deploy', 'oracle', 'backup', 'nagios'])} from 10.20.{rng.randint(1, 9)}.{rng.randint(2, 250)} port {rng.randint(30000, 65000)} ssh2: RSA SHA256:{short_hash(rng, 12)}"
        )
    lines += [
        "Dec 07 03:41:18 db-legacy-dc2-r14-07 systemd[1]: Stopping OpenSSH server daemon...",
        "Dec 07 03:41:18 db-legacy-dc2-r14-07 sshd[1187]: Received signal 15; terminating.",
        "Dec 07 03:41:18 db-legacy-dc2-r14-07 systemd[1]: Stopped OpenSSH server daemon.",
        "Dec 07 03:41:18 db-legacy-dc2-r14-07 systemd[1]: Starting OpenSSH server daemon...",
        "Dec 07 03:41:18 db-legacy-dc2-r14-07 sshd[40213]: /etc/ssh/sshd_config line 41: Bad SSH2 KexAlgorithms 'sntrup761x25519-sha512@openssh.com,curve25519-sha256,curve25519-sha256@libssh.org,diffie-hellman-group16-sha512'.",
        "Dec 07 03:41:18 db-legacy-dc2-r14-07 systemd[1]: sshd.service: main process exited, code=exited, status=255/n/a",
        "Dec 07 03:41:18 db-legacy-dc2-r14-07 systemd[1]: Failed to start OpenSSH server daemon.",
        "Dec 07 03:41:18 db-legacy-dc2-r14-07 systemd[1]: Unit sshd.service entered failed state.",
    ]
    for i in range(42):
        lines.append(
            f"Dec 07 03:{41 + i // 15}:{(19 + i * 4) % 60:02d} db-legacy-dc2-r14-07 systemd[1]: sshd.service holdoff time over, scheduling restart."
            if i % 2
            else f"Dec 07 03:{41 + i // 15}:{(19 + i * 4) % 60:02d} db-legacy-dc2-r14-07 sshd[{40214 + i}]: /etc/ssh/sshd_config line 41: Bad SSH2 KexAlgorithms 'sntrup761x25519-sha512@openssh.com,curve25519-sha256,curve25519-sha256@libssh.org,diffie-hellman-group16-sha512'."
        )
    lines.append(
        "Dec 07 03:44:02 db-legacy-dc2-r14-07 systemd[1]: sshd.service start request repeated too quickly, refusing to start."
    )
    return "\n".join(lines)


_SSHD_J2 = """# {{ ansible_managed }}
# Hardening baseline v3 (security team). Do not edit on hosts.
Port 22
AddressFamily inet
ListenAddress 0.0.0.0

HostKey /etc/ssh/ssh_host_ed25519_key
HostKey /etc/ssh/ssh_host_rsa_key

SyslogFacility AUTHPRIV
LogLevel VERBOSE

LoginGraceTime 30
PermitRootLogin no
StrictModes yes
MaxAuthTries 3
MaxSessions 10

PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
{% if sshd_authorized_keys_command is defined %}
AuthorizedKeysCommand {{ sshd_authorized_keys_command }}
AuthorizedKeysCommandUser nobody
{% endif %}

PasswordAuthentication no
KbdInteractiveAuthentication no
GSSAPIAuthentication no
UsePAM yes

AllowGroups {{ sshd_allow_groups | join(' ') }}

X11Forwarding no
AllowTcpForwarding {{ 'yes' if 'bastion' in group_names else 'no' }}
ClientAliveInterval 300
ClientAliveCountMax 2

KexAlgorithms {{ sshd_kex_algorithms | join(',') }}
Ciphers {{ sshd_ciphers | join(',') }}
MACs {{ sshd_macs | join(',') }}

Subsystem sftp internal-sftp
"""

_TASKS_MAIN = """---
- name: Render sshd_config
  ansible.builtin.template:
    src: sshd_config.j2
    dest: /etc/ssh/sshd_config
    owner: root
    group: root
    mode: "0600"
  notify: Restart sshd

- name: Remove legacy moduli below 3072 bits
  ansible.builtin.shell: awk '$5 >= 3071' /etc/ssh/moduli > /etc/ssh/moduli.safe && mv /etc/ssh/moduli.safe /etc/ssh/moduli
  args:
    creates: /etc/ssh/.moduli-pruned
  notify: Restart sshd

- name: Ensure sshd is enabled
  ansible.builtin.service:
    name: "{{ sshd_service_name }}"
    enabled: true
"""

_DEFAULTS = """---
sshd_allow_groups: [ops, deploy, backup]
sshd_service_name: "{{ 'ssh' if ansible_os_family == 'Debian' else 'sshd' }}"
sshd_kex_algorithms:
  - sntrup761x25519-sha512@openssh.com
  - curve25519-sha256
  - curve25519-sha256@libssh.org
  - diffie-hellman-group16-sha512
sshd_ciphers:
  - chacha20-poly1305@openssh.com
  - aes256-gcm@openssh.com
  - aes128-gcm@openssh.com
sshd_macs:
  - hmac-sha2-512-etm@openssh.com
  - hmac-sha2-256-etm@openssh.com
"""


def _check_diff(seed: int) -> str:
    rng = random.Random(seed)
    lines = ["PLAY [sshd hardening] " + "*" * 60, "", "TASK [Gathering Facts] " + "*" * 58]
    hosts = [
        f"{r}-dc{rng.randint(1, 3)}-r{rng.randint(1, 24):02d}-{rng.randint(1, 40):02d}"
        for r in ["api", "cache", "mon"]
        for _ in range(20)
    ]
    for h in hosts:
        lines.append(f"ok: [{h}]")
    lines += ["", "TASK [sshd_hardening : Render sshd_config] " + "*" * 38]
    for h in hosts:
        lines.append(f"ok: [{h}]")
    lines += ["", "TASK [sshd_hardening : Render sshd_config] (el7 canary) " + "*" * 24]
    lines += [
        "--- before: /etc/ssh/sshd_config",
        "+++ after: /home/dev/.ansible/tmp/ansible-local-8812/tmpq2k1/sshd_config.j2",
        "@@ -38,7 +38,7 @@",
        " ClientAliveCountMax 2",
        " ",
        "-KexAlgorithms curve25519-sha256@libssh.org,diffie-hellman-group-exchange-sha256",
        "+KexAlgorithms curve25519-sha256@libssh.org,diffie-hellman-group16-sha512,diffie-hellman-group-exchange-sha256",
        " Ciphers chacha20-poly1305@openssh.com,aes256-gcm@openssh.com,aes128-gcm@openssh.com",
        "",
        "changed: [db-legacy-dc2-r14-07]  (validated: /usr/sbin/sshd -t -f /root/.ansible/tmp/ansible-tmp-1765170104.2-5517/source)",
        "",
        "PLAY RECAP " + "*" * 70,
    ]
    for h in hosts:
        lines.append(
            f"{h:<26}: ok=3    changed=0    unreachable=0    failed=0    skipped=1    rescued=0    ignored=0"
        )
    lines.append(
        f"{'db-legacy-dc2-r14-07':<26}: ok=3    changed=1    unreachable=0    failed=0    skipped=1    rescued=0    ignored=0"
    )
    return "\n".join(lines)


def _oob_restore(seed: int) -> str:
    rng = random.Random(seed)
    lines = [f"{'host':<26} {'console':<10} {'action':<34} result"]
    for i in range(43):
        host = f"{rng.choice(['db-legacy', 'db-legacy', 'build', 'mon'])}-dc{rng.choice([2, 2, 3])}-r{rng.randint(10, 18):02d}-{i + 1:02d}"
        if host.startswith("db-legacy"):
            lines.append(
                f"{host:<26} {'idrac':<10} {'deferred (db-legacy window 22:00)':<34} pending"
            )
        else:
            lines.append(
                f"{host:<26} {'idrac':<10} {'restore sshd_config.rpmsave':<34} sshd active, port 22 open"
            )
    return "\n".join(lines)


_L4_FACTS = [
    Fact("person", ("Yuki Tanaka", "security"), "wrote the hardening baseline"),
    Fact("person", ("Dmitri Volkov", "iDRAC"), "DC ops at dc2 with console access"),
    Fact("number", ("2,870",), "fleet size, said once in passing"),
    Fact("number", ("03:15",), "when the rollout started, said once"),
    Fact("tool_output", ("unreachable=59",), "unreachable hosts in the run totals"),
    Fact("tool_output", ("OpenSSH_7.4p1",), "sshd version on the locked-out hosts"),
    Fact("conclusion", ("sntrup761",), "the key exchange 7.4 rejects, so sshd won't start"),
    Fact("constraint", ("db-legacy", "22:00"), "nothing against db-legacy before 22:00"),
    Fact("constraint", ("serial", "5%"), "batches of at most 5%"),
    Fact("decision", ("sshd -t -f %s",), "validate the rendered config before installing it"),
    Fact("path", ("inventories/prod/group_vars/el7/sshd.yml",), "per-OS vars file, the later path"),
    Fact("path", ("roles/sshd_hardening/templates/sshd_config.j2",), "the template"),
    Fact("number", ("43", "CentOS 7"), "CentOS 7 hosts locked out, the corrected count"),
]

L4 = Session(
    "l4-ansible-sshd-lockout",
    [
        U(
            f"Last night's sshd hardening rollout went bad. It's the infra-ansible repo ({_ANS}), site.yml with --tags sshd, kicked off by the scheduler at 03:15 across the whole fleet, about 2,870 hosts. This morning ops can't SSH into a chunk of machines. Yuki Tanaka from the security team wrote the hardening baseline and she's asking what happened too. Start with the run log?"
        ),
        A(
            "Summarizing the JSON callback log from the run first, then reading the role.",
            Call(
                "shell",
                codex_shell(
                    "python3 scripts/recap.py logs/site-2026-12-07T0315.json --tags sshd", _ANS
                ),
                codex_text(_recap(2401), seconds=2.2),
            ),
            Call(
                "shell",
                codex_shell(
                    "cat roles/sshd_hardening/tasks/main.yml roles/sshd_hardening/defaults/main.yml",
                    _ANS,
                ),
                codex_json(_TASKS_MAIN + "\n" + _DEFAULTS, seconds=0.1),
            ),
            Call(
                "shell",
                codex_shell("cat -n roles/sshd_hardening/templates/sshd_config.j2", _ANS),
                codex_json(numbered(_SSHD_J2), seconds=0.1),
            ),
            Call(
                "shell",
                codex_shell(
                    "git log --format='%h %an %ad %s' --date=short -n 80 -- roles/ inventories/ schedules/",
                    _ANS,
                ),
                codex_json(
                    _git_log(
                        2407,
                        80,
                        ["Yuki Tanaka", "Ahmed Karimi", "Sofia Lindgren", "Pieter de Vries"],
                        [
                            "chore(ntp): pool change {n}",
                            "feat(node_exporter): bump to 1.{n}",
                            "fix(logrotate): nginx rotate {n}",
                            "inventory: add rack hosts {n}",
                            "feat(sshd): allow group {n}",
                            "chore(auditd): rules {n}",
                        ],
                        {
                            0.04: "b81e6f0c2 Yuki Tanaka       2026-12-03 feat(sshd_hardening): baseline v3 key exchange, ciphers and MACs",
                        },
                    ),
                    seconds=0.2,
                ),
            ),
        ),
        A(
            "No task failed, but a set of hosts went unreachable partway through the run: Ansible reached them for the first batches, the template changed sshd_config, the handler restarted sshd, and the next play could not connect. The names are mostly db-legacy; from the names, all 59 unreachable hosts look like the old CentOS 7 machines. The template task has no `validate`, so nothing checked the rendered config against the host's sshd before installing it. Let me see which OpenSSH versions the fleet runs.",
            Call(
                "shell",
                codex_shell(
                    "python3 scripts/facts_table.py --cache .facts_cache --fields distribution,major,ssh_version --limit 210",
                    _ANS,
                ),
                codex_text(_facts_table(2402), seconds=0.9),
            ),
        ),
        A(
            "Correction on the count: the facts cache has 43 CentOS 7 hosts in the whole fleet, all on OpenSSH 7.4, so the 59 unreachable hosts are 43 CentOS 7 machines plus 16 others. The 16 are in dc3 rack r09, which `scripts/recap.py --all` shows were already unreachable before the sshd play started (that rack was powered off for decommissioning and is still in the inventory). So 43 CentOS 7 hosts are actually locked out."
        ),
        U(
            "Dmitri Volkov is DC ops at dc2 and has console access to those boxes through iDRAC; he says the console server is reachable from the jump host as oob-dc2. Can you get a look at one?"
        ),
        A(
            "Reading sshd's journal on one of them through the console server.",
            Call(
                "shell",
                codex_shell(
                    "ssh oob-dc2 console -r db-legacy-dc2-r14-07 -e 'journalctl -u sshd --no-pager -n 120'",
                    _ANS,
                ),
                codex_text(_journal(2403), seconds=8.4),
            ),
        ),
        A(
            "That's the cause. The baseline's key exchange list starts with sntrup761x25519-sha512@openssh.com, which OpenSSH only learned in 8.5. OpenSSH 7.4 treats an unknown algorithm in KexAlgorithms as a fatal config error, so after the handler restarted it, sshd exited with status 255 on every attempt and systemd gave up. Existing sessions were gone with the old process and no new ones can be opened. Newer distributions accept the list, which is why only the CentOS 7 hosts broke."
        ),
        U(
            "Two rules while you fix this. Nothing runs against the db-legacy group before 22:00, those are the billing Oracle boxes and any change there needs the evening window. And any sshd change goes out with serial at most 5% per batch, never the 20% the schedule used."
        ),
        A(
            "Agreed. The fix has two parts. First, the template task gets `validate: /usr/sbin/sshd -t -f %s`, so Ansible renders the file, asks the host's own sshd to parse it, and refuses to install it if that fails; a bad config then fails one task on one host instead of locking the host out. Second, the key exchange list becomes per OS: CentOS 7 gets a list 7.4 understands. I'll put the override in group_vars/centos7_legacy.yml.",
            Call(
                "apply_patch",
                codex_patch(
                    "roles/sshd_hardening/tasks/main.yml",
                    '    mode: "0600"\n  notify: Restart sshd',
                    '    mode: "0600"\n    validate: /usr/sbin/sshd -t -f %s\n  notify: Restart sshd',
                    "- name: Render sshd_config",
                ),
                codex_patched("roles/sshd_hardening/tasks/main.yml"),
            ),
            Call(
                "shell",
                codex_shell(
                    "cat > group_vars/centos7_legacy.yml <<'EOF'\n---\n# OpenSSH 7.4: no sntrup761, no curve25519-sha256 without @libssh.org\nsshd_kex_algorithms:\n  - curve25519-sha256@libssh.org\n  - diffie-hellman-group16-sha512\n  - diffie-hellman-group-exchange-sha256\nEOF\ngit status --short",
                    _ANS,
                ),
                codex_json(
                    "?? group_vars/centos7_legacy.yml\n M roles/sshd_hardening/tasks/main.yml",
                    seconds=0.1,
                ),
            ),
        ),
        U(
            "There's no centos7_legacy group in our inventory. The prod inventory already has an el7 group, and Yuki wants vars split per role into directories. Put it where it belongs."
        ),
        A(
            "Moving it to inventories/prod/group_vars/el7/sshd.yml, next to the existing el7 vars.",
            Call(
                "shell",
                codex_shell(
                    "mkdir -p inventories/prod/group_vars/el7 && git mv -f group_vars/centos7_legacy.yml inventories/prod/group_vars/el7/sshd.yml 2>/dev/null || mv group_vars/centos7_legacy.yml inventories/prod/group_vars/el7/sshd.yml; ls inventories/prod/group_vars/el7/ && ansible-inventory -i inventories/prod --graph el7 | head -n 60",
                    _ANS,
                ),
                codex_text(
                    "base.yml\nntp.yml\nsshd.yml\n@el7:\n"
                    + "\n".join(
                        f"  |--db-legacy-dc2-r{10 + i // 6:02d}-{i % 6 + 1:02d}" for i in range(43)
                    ),
                    seconds=1.3,
                ),
            ),
            Call(
                "apply_patch",
                codex_patch(
                    "schedules/nightly.yml",
                    "    serial: 20%",
                    "    serial: 5%",
                    "- name: sshd hardening",
                ),
                codex_patched("schedules/nightly.yml"),
            ),
        ),
        A(
            "Dry run against a canary set and one el7 host, which I can do now because --check changes nothing on db-legacy.",
            Call(
                "shell",
                codex_shell(
                    "ansible-playbook -i inventories/prod site.yml --tags sshd --check --diff --limit 'api:&dc1[0:11],cache:&dc2[0:11],mon[0:11],db-legacy-dc2-r14-07'",
                    _ANS,
                ),
                codex_text(_check_diff(2405), seconds=61.8),
            ),
        ),
        A(
            "The validated render passes on the el7 canary with the 7.4 key exchange list and nothing changes on the others. Dmitri is restoring the last good config over iDRAC on the non-db-legacy hosts now; the db-legacy ones wait for 22:00.",
            Call(
                "shell",
                codex_shell(
                    "ssh oob-dc2 ./restore-sshd.sh --from-list /tmp/locked-out.txt --skip-group db-legacy",
                    _ANS,
                ),
                codex_text(_oob_restore(2406), seconds=212.0),
            ),
        ),
        A(
            "Where this stands: the template in roles/sshd_hardening/templates/sshd_config.j2 is unchanged, but it is now only installed after the host's sshd parses it, CentOS 7 gets its own key exchange list, and the nightly job runs sshd changes at serial 5%. The non-db-legacy hosts are back; db-legacy is restored in tonight's window."
        ),
    ],
    _L4_FACTS,
)


# -- l5: transactional email in spam after a DKIM key rotation ---------------------------------

_MAIL = "/home/dev/brightnest-mail"
_KEY_OLD = (
    "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAz7V1k3Yq9W2" + "Hq4mXo8N1bRZ" * 26 + "IDAQAB"
)
_KEY_NEW_CUT = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAr4tQ0PdX" + "Lw7pK2sJc9Fy" * 17


def _maillog(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    rcpt = ["gmail.com", "outlook.com", "yahoo.com", "icloud.com", "gmx.de", "proton.me"]
    lines = []
    for i in range(170):
        qid = short_hash(rng, 11).upper()
        t = f"Dec  4 {9 + i // 60:02d}:{(10 + i) % 60:02d}:{rng.randint(0, 59):02d}"
        kind = rng.random()
        if kind < 0.35:
            lines.append(
                f"{t} mx-out-{rng.randint(1, 3)} opendkim[{rng.randint(700, 900)}]: {qid}: DKIM-Signature field added (s=s2026b, d=brightnest.co)"
            )
        elif kind < 0.8:
            dom = rng.choice(rcpt)
            lines.append(
                f"{t} mx-out-{rng.randint(1, 3)} postfix/smtp[{rng.randint(2000, 9000)}]: {qid}: to=<{short_hash(rng, 6)}@{dom}>, relay={dom.split('.')[0]}-smtp-in.l.{dom}[{rng.randint(20, 220)}.{rng.randint(1, 250)}.{rng.randint(1, 250)}.{rng.randint(1, 250)}]:25, delay={rng.uniform(0.2, 3):.2f}, dsn=2.0.0, status=sent (250 2.0.0 OK {rng.randint(1700000000, 1799999999)})"
            )
        else:
            lines.append(
                f"{t} mx-out-{rng.randint(1, 3)} postfix/smtp[{rng.randint(2000, 9000)}]: {qid}: to=<{short_hash(rng, 6)}@gmail.com>, relay=gmail-smtp-in.l.google.com[142.250.{rng.randint(1, 250)}.{rng.randint(1, 250)}]:25, delay={rng.uniform(0.2, 3):.2f}, dsn=5.7.26, status=bounced (host gmail-smtp-in.l.google.com said: 550-5.7.26 Unauthenticated email from brightnest.co is not accepted due to domain's DMARC policy. 550 5.7.26 DKIM = did not pass, SPF = did not pass)"
            )
    return bury(lines, planted)


def _dmarc_rows(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    orgs = ["google.com", "Outlook.com", "Yahoo", "Mail.Ru", "comcast.net", "web.de", "fastmail"]
    ips = ["198.51.100.", "203.0.113.", "192.0.2.", "185.12.64."]
    head = [
        "org_name     begin_date  source_ip        count  disposition  dkim_domain    selector  dkim    spf_domain        spf        header_from",
        "-----------  ----------  ---------------  -----  -----------  -------------  --------  ------  ----------------  ---------  -------------",
    ]
    rows = []
    for _ in range(150):
        org = rng.choice(orgs)
        day = f"2026-12-0{rng.randint(1, 6)}"
        sel = rng.choice(["s2025a", "s2025a", "s2026b", "sv1"])
        dkim = "pass" if sel != "s2026b" or day < "2026-12-04" else rng.choice(["fail", "pass"])
        spf = rng.choice(["pass", "pass", "permerror"]) if day >= "2026-12-03" else "pass"
        dom = "sendvia.net" if sel == "sv1" else "brightnest.co"
        disp = "none" if "pass" in (dkim, spf) else "quarantine"
        rows.append(
            f"{org:<12} {day}  {rng.choice(ips)}{rng.randint(2, 250):<4}  {rng.randint(1, 2400):>5}  {disp:<11}  {dom:<13}  {sel:<8}  {dkim:<6}  {'bounce.' + dom:<16}  {spf:<9}  brightnest.co"
        )
    return "\n".join(head) + "\n" + bury(rows, planted)


def _spf_tree() -> str:
    lines = [
        "brightnest.co  TXT  v=spf1 include:_spf.google.com include:amazonses.com include:mktg.sendvia.net include:_spf.zdsys.com include:servers.mcsv.net include:_spf.salesforce.com ip4:198.51.100.0/26 -all",
        "  lookups so far: 1 (brightnest.co)",
        "  include:_spf.google.com            +1 -> 2",
        "    include:_netblocks.google.com    +1 -> 3",
        "    include:_netblocks2.google.com   +1 -> 4",
        "    include:_netblocks3.google.com   +1 -> 5",
        "  include:amazonses.com              +1 -> 6",
        "  include:mktg.sendvia.net           +1 -> 7",
        "    include:spf1.sendvia.net         +1 -> 8",
        "    include:spf2.sendvia.net         +1 -> 9",
        "  include:_spf.zdsys.com             +1 -> 10",
        "  include:servers.mcsv.net           +1 -> 11   <- over the limit",
        "  include:_spf.salesforce.com        +1 -> 12",
        "    a:mta.salesforce.com             +1 -> 13",
    ]
    rng = random.Random(2507)
    for _ in range(70):
        lines.append(
            f"    ip4:{rng.choice(['35.190.', '64.233.', '54.240.', '13.111.', '205.201.'])}{rng.randint(0, 255)}.0/{rng.choice([19, 20, 21, 22, 24])}   (from {rng.choice(['_netblocks.google.com', 'amazonses.com', 'spf1.sendvia.net', 'servers.mcsv.net', '_spf.salesforce.com'])})"
        )
    lines += [
        "",
        "result: permerror: 13 DNS lookups (limit 10); receivers that enforce RFC 7208 4.6.4 treat SPF as failed",
        "changed since 2026-12-02: include:_spf.salesforce.com added (zone commit 5d0e1a7)",
    ]
    return "\n".join(lines)


def _zone_yaml(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "# dns/zones/brightnest.co.yaml: octoDNS source of truth, applied by CI on merge",
        "---",
        "'':",
        "  - type: A",
        "    values: [198.51.100.10, 198.51.100.11]",
        "  - type: MX",
        "    values:",
        "      - {exchange: aspmx.l.google.com., preference: 1}",
        "      - {exchange: alt1.aspmx.l.google.com., preference: 5}",
        "  - type: TXT",
        "    values:",
        "      - v=spf1 include:_spf.google.com include:amazonses.com include:mktg.sendvia.net include:_spf.zdsys.com include:servers.mcsv.net include:_spf.salesforce.com ip4:198.51.100.0/26 -all",
        "      - google-site-verification=Q7x0d1-brightnest",
        "_dmarc:",
        "  type: TXT",
        "  value: v=DMARC1\\; p=quarantine\\; pct=100\\; rua=mailto:dmarc@brightnest.co\\; adkim=r\\; aspf=r",
        "s2025a._domainkey:",
        "  type: TXT",
        "  values:",
        f"    - v=DKIM1\\; k=rsa\\; p={_KEY_OLD[:200]}",
        f"      {_KEY_OLD[200:]}",
        "s2026b._domainkey:",
        "  type: TXT",
        f"  value: v=DKIM1\\; k=rsa\\; p={_KEY_NEW_CUT}",
    ]
    for i in range(60):
        name = f"{rng.choice(['app', 'api', 'status', 'help', 'cdn', 'img', 'go', 'links', 'auth', 'files'])}{i}"
        lines += [
            f"{name}:",
            f"  type: {rng.choice(['CNAME', 'A'])}",
            f"  value: {rng.choice(['brightnest.netlify.app.', 'd3x9.cloudfront.net.', '198.51.100.' + str(rng.randint(12, 60)), 'custom.zendesk.com.'])}",
        ]
    return "\n".join(lines)


def _reset_share(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        f"{'hour (UTC)':<17} {'reset mails':>11} {'bounced':>8} {'spam-foldered (FBL)':>20} {'share':>6}"
    ]
    for h in range(72):
        day = 4 + (9 + h) // 24
        sent = rng.randint(900, 2600)
        bad = int(sent * rng.uniform(0.1, 0.26))
        lines.append(
            f"2026-12-0{day} {(9 + h) % 24:02d}:00 {sent:>11} {bad // 3:>8} {bad - bad // 3:>20} {100 * bad / sent:>5.1f}%"
        )
    lines.append("")
    lines.append(
        "all recipients, 72 h: 118,402 reset mails, 21,311 bounced or spam-foldered (18.0%)"
    )
    lines.append(
        "gmail.com only, 72 h:  62,880 reset mails, 19,433 bounced or spam-foldered (30.9%)"
    )
    return "\n".join(lines)


_L5_FACTS = [
    Fact("person", ("Aisha Bello", "support"), "runs customer support, reported the tickets"),
    Fact("person", ("Gareth Hughes", "DNS"), "owns the DNS zone on the infra team"),
    Fact("number", ("140,000",), "mails a day, said once in passing"),
    Fact("number", ("09:10",), "when the key was rotated, said once"),
    Fact("tool_output", ("9184",), "DKIM failures for s2026b at Google in the DMARC rows"),
    Fact("tool_output", ("13 DNS lookups",), "SPF permerror from the lookup checker"),
    Fact("conclusion", ("s2026b", "255"), "the new key's TXT record was cut at 255 characters"),
    Fact("constraint", ("s2025a", "Jan 15"), "the old selector stays published until Jan 15"),
    Fact("constraint", ("sendvia",), "the marketing vendor's include must stay"),
    Fact("decision", ("news.brightnest.co",), "marketing moves to its own subdomain and SPF"),
    Fact("decision", ("p=none",), "DMARC policy while fixing, the later choice"),
    Fact("path", ("dns/zones/brightnest.co.yaml",), "the zone file"),
    Fact("number", ("18%",), "share of reset mails affected, the corrected figure"),
]

L5 = Session(
    "l5-dkim-rotation-spam",
    [
        U(
            f"Password reset emails are landing in spam or bouncing since we rotated the DKIM key on Thursday at 09:10. Aisha Bello, who runs customer support, has a pile of tickets from people who never got their reset link. We send about 140,000 emails a day through our Postfix relays, most of it transactional. Mail config and DNS are in {_MAIL}. What broke?"
        ),
        A(
            "Starting with the relays' log around the rotation and the DMARC aggregate reports since then.",
            Call(
                "Bash",
                {
                    "command": "ssh mx-out-1 \"zgrep -h 'Dec  4 \\(09\\|10\\|11\\)' /var/log/mail.log.1.gz\" | head -n 180",
                    "description": "Relay log after the rotation",
                },
                _maillog(2501, {}),
            ),
            Call(
                "Bash",
                {
                    "command": "parsedmarc --offline -c parsedmarc.ini reports/2026-12/*.xml.gz --output-format table | head -n 160",
                    "description": "DMARC aggregate rows for December",
                },
                _dmarc_rows(
                    2502,
                    {
                        0.58: f"{'google.com':<12} 2026-12-05  198.51.100.23   {9184:>5}  {'quarantine':<11}  {'brightnest.co':<13}  {'s2026b':<8}  {'fail':<6}  {'bounce.brightnest.co':<16}  {'permerror':<9}  brightnest.co",
                    },
                ),
            ),
        ),
        A(
            "Two failures at once. Mail is signed with the new selector s2026b and Gmail says DKIM did not pass; the DMARC rows show s2026b failing from our own relay IPs since the 4th, in one row from 198.51.100.23 thousands of messages at once. SPF is also coming back as permerror from the 3rd on, so with both failing DMARC quarantines or rejects. Let me check the published key and the SPF record.",
            Call(
                "Bash",
                {
                    "command": "dig +short TXT s2026b._domainkey.brightnest.co; echo ---; dig +short TXT s2025a._domainkey.brightnest.co; echo ---; opendkim-testkey -d brightnest.co -s s2026b -k /etc/opendkim/keys/s2026b.private -vvv",
                    "description": "Published DKIM keys and a key test",
                },
                f'"v=DKIM1; k=rsa; p={_KEY_NEW_CUT[:237]}"\n---\n"v=DKIM1; k=rsa; p={_KEY_OLD[:200]}" "{_KEY_OLD[200:]}"\n---\nopendkim-testkey: using default configfile /etc/opendkim.conf\nopendkim-testkey: checking key \'s2026b._domainkey.brightnest.co\'\nopendkim-testkey: \'s2026b._domainkey.brightnest.co\' record not secure\nopendkim-testkey: keys do not match\n',
            ),
            Call(
                "Bash",
                {
                    "command": "python3 tools/spf_tree.py brightnest.co",
                    "description": "SPF include tree with lookup count",
                },
                _spf_tree(),
            ),
            Call(
                "Read",
                {"file_path": f"{_MAIL}/dns/zones/brightnest.co.yaml"},
                numbered(_zone_yaml(2503)),
            ),
        ),
        A(
            "Found both. The s2026b record in the zone is a single string, and a TXT string can hold at most 255 characters; the 2048-bit key doesn't fit, so what got published is the first 255 characters of the record and the public key is cut off, which is why opendkim-testkey says the keys don't match and every receiver fails the signature. The old s2025a record is split into two quoted strings, which is how long keys have to be published. Separately, SPF now needs 13 lookups since the Salesforce include was added on the 3rd, over the limit of 10, so SPF is a permerror everywhere."
        ),
        U(
            "Gareth Hughes owns the DNS zone on the infra team, he'll merge the zone change. Two things you can't do: marketing's include:mktg.sendvia.net has to stay in an SPF record somewhere, it's in their vendor contract. And s2025a stays published until Jan 15, some queued and forwarded mail still carries the old signature."
        ),
        A(
            "Then for SPF: rather than deleting includes from the root, marketing mail moves to its own subdomain, news.brightnest.co, with its own SPF record carrying the sendvia and Mailchimp includes. The root record drops those two and is back to 9 lookups, which also leaves room for the next vendor. The DKIM fix is to publish the s2026b key as two strings, like s2025a. s2025a stays as it is. How bad is it for resets? Checking the share of reset mails that bounced or went to spam.",
            Call(
                "Bash",
                {
                    "command": "python3 tools/reset_delivery.py --since '2026-12-04 09:00' --hours 72 --template password_reset",
                    "description": "Reset mails bounced or spam-foldered per hour",
                },
                _reset_share(2504),
            ),
        ),
        A(
            "About 31% of reset mails failed over the three days. Correction: that 30.9% is Gmail only, where the DMARC policy bites hardest. Across all recipients it's 18% of reset mails, 21,311 of 118,402. Making the zone change.",
            Call(
                "MultiEdit",
                {
                    "file_path": f"{_MAIL}/dns/zones/brightnest.co.yaml",
                    "edits": [
                        {
                            "old_string": "include:mktg.sendvia.net include:_spf.zdsys.com include:servers.mcsv.net include:_spf.salesforce.com",
                            "new_string": "include:_spf.zdsys.com include:_spf.salesforce.com",
                        },
                        {
                            "old_string": f"  value: v=DKIM1\\; k=rsa\\; p={_KEY_NEW_CUT}",
                            "new_string": "  values:\n    - v=DKIM1\\; k=rsa\\; p=<first 200 characters of keys/s2026b.txt>\n      <rest of keys/s2026b.txt>",
                        },
                    ],
                },
                edited(
                    f"{_MAIL}/dns/zones/brightnest.co.yaml",
                    "s2026b._domainkey:\n  type: TXT\n  values:\n    - v=DKIM1\\; k=rsa\\; p=<first 200 characters of keys/s2026b.txt>\n      <rest of keys/s2026b.txt>",
                    22,
                ),
            ),
            Call(
                "Write",
                {
                    "file_path": f"{_MAIL}/dns/zones/news.brightnest.co.yaml",
                    "content": "# marketing mail: its own SPF so the root stays under 10 lookups\n---\n'':\n  - type: TXT\n    value: v=spf1 include:mktg.sendvia.net include:servers.mcsv.net -all\n_dmarc:\n  type: TXT\n  value: v=DMARC1\\; p=none\\; rua=mailto:dmarc@brightnest.co\n",
                },
                written(f"{_MAIL}/dns/zones/news.brightnest.co.yaml"),
            ),
        ),
        A(
            "The DMARC policy on the root stays at p=quarantine: relaxing it would let spoofed resets through, and once DKIM verifies again quarantine stops hurting us.",
            Call(
                "Bash",
                {
                    "command": "octodns-validate --config-file dns/octodns.yaml && octodns-sync --config-file dns/octodns.yaml brightnest.co. news.brightnest.co. 2>&1 | tail -n 40",
                    "description": "Validate and plan the zone change",
                },
                "\n".join(
                    [
                        "2026-12-07T09:31:02 INFO  Manager __init__: config_file=dns/octodns.yaml",
                        "2026-12-07T09:31:02 INFO  Manager sync: eligible_zones=['brightnest.co.', 'news.brightnest.co.'], dry_run=True",
                        "*" * 80,
                        "* brightnest.co.",
                        "*" * 80,
                        "* route53 (Route53Provider)",
                        "*   Update",
                        "*     <TxtRecord TXT 300, brightnest.co., ['v=spf1 include:_spf.google.com include:amazonses.com include:mktg.sendvia.net ...']> ->",
                        "*     <TxtRecord TXT 300, brightnest.co., ['v=spf1 include:_spf.google.com include:amazonses.com include:_spf.zdsys.com include:_spf.salesforce.com ip4:198.51.100.0/26 -all']>",
                        "*   Update",
                        "*     <TxtRecord TXT 300, s2026b._domainkey.brightnest.co., 1 string> -> <TxtRecord TXT 300, s2026b._domainkey.brightnest.co., 2 strings (255 + 157)>",
                        "*   Summary: Creates=0, Updates=2, Deletes=0, Existing Records=71",
                        "*" * 80,
                        "* news.brightnest.co.",
                        "*" * 80,
                        "* route53 (Route53Provider)",
                        "*   Create <TxtRecord TXT 300, news.brightnest.co., ['v=spf1 include:mktg.sendvia.net include:servers.mcsv.net -all']>",
                        "*   Create <TxtRecord TXT 300, _dmarc.news.brightnest.co., ['v=DMARC1; p=none; rua=mailto:dmarc@brightnest.co']>",
                        "*   Summary: Creates=2, Updates=0, Deletes=0, Existing Records=0",
                        "2026-12-07T09:31:04 INFO  Manager sync: 4 total changes (dry run)",
                    ]
                ),
            ),
        ),
        U(
            "Gareth wants the root at p=none while this settles, for two weeks, so we can read the aggregate reports without Gmail dropping anything that still fails for some other reason. Security signed off. Then back to quarantine."
        ),
        A(
            "Setting the root DMARC policy to p=none with a reminder to restore quarantine in two weeks, and a check that verifies the published key against the private one.",
            Call(
                "Edit",
                {
                    "file_path": f"{_MAIL}/dns/zones/brightnest.co.yaml",
                    "old_string": "  value: v=DMARC1\\; p=quarantine\\; pct=100\\;",
                    "new_string": "  # p=none while DKIM/SPF settle; back to quarantine after two weeks of clean reports\n  value: v=DMARC1\\; p=none\\; pct=100\\;",
                },
                edited(
                    f"{_MAIL}/dns/zones/brightnest.co.yaml",
                    "_dmarc:\n  type: TXT\n  # p=none while DKIM/SPF settle; back to quarantine after two weeks of clean reports\n  value: v=DMARC1\\; p=none\\; pct=100\\; rua=mailto:dmarc@brightnest.co\\; adkim=r\\; aspf=r",
                    14,
                ),
            ),
            Call(
                "Grep",
                {"pattern": "s2026b|s2025a", "path": _MAIL, "output_mode": "content", "-n": True},
                "\n".join(
                    [
                        f"{_MAIL}/opendkim/KeyTable:1:s2026b._domainkey.brightnest.co brightnest.co:s2026b:/etc/opendkim/keys/s2026b.private",
                        f"{_MAIL}/opendkim/KeyTable:2:s2025a._domainkey.brightnest.co brightnest.co:s2025a:/etc/opendkim/keys/s2025a.private",
                        f"{_MAIL}/opendkim/SigningTable:1:*@brightnest.co s2026b._domainkey.brightnest.co",
                        f"{_MAIL}/dns/zones/brightnest.co.yaml:17:s2025a._domainkey:",
                        f"{_MAIL}/dns/zones/brightnest.co.yaml:22:s2026b._domainkey:",
                        f"{_MAIL}/docs/rotation.md:12:Publish the new selector (s2026b) at least 48 h before switching the SigningTable.",
                        f"{_MAIL}/docs/rotation.md:19:Keep the previous selector (s2025a) published until every queue has drained.",
                    ]
                ),
            ),
        ),
        A(
            "Zone change ready for Gareth: the s2026b key as two strings, the root SPF at 9 lookups with marketing on news.brightnest.co, and DMARC at p=none for two weeks. s2025a stays in the zone until Jan 15. Once it's merged I'll rerun opendkim-testkey and the SPF tree."
        ),
    ],
    _L5_FACTS,
)

SESSIONS = [L1, L2, L3, L4, L5]
