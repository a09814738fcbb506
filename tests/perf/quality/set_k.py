# ruff: noqa: E501  (scripted session data: long tool outputs read better unwrapped)
"""Set K: tuning sessions (per-fact results allowed), written without reading the summarizer.

Five domains no other set uses: a GraphQL N+1 regression in a Node API, a .NET solution whose
Windows build breaks on path length, a JVM garbage-collection pause regression after a heap cut,
a Redis Sentinel failover that loses writes and five-second DNS stalls in Alpine pods on
Kubernetes. Each session is long (24-35k tokens by the len/3 estimate): outputs of 50-300 lines
(pg_stat_statements tables, tracing JSON, MSBuild logs, GC logs, jstat tables, Sentinel logs,
INFO dumps, conntrack stats, dnsperf reports, git logs, test runs) with the planted value among
many values of its shape, several files a turn, Claude Code shapes (Bash, Read, Edit, MultiEdit,
Write, Grep, Glob) and Codex shapes (shell argv with both output envelopes, apply_patch). Some
values are only in a tool output and are restated, if at all, only roughly ("about 41 seconds");
some numbers are said once in passing. A value restated then corrected keeps only the correction
as the needle; a value later superseded keeps only the later one.
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
        day = f"2026-{11 - i * 3 // count:02d}-{28 - i % 27:02d}"
        subject = rng.choice(subjects).format(n=rng.randint(100, 990))
        lines.append(f"{short_hash(rng, 9)} {rng.choice(authors):<18} {day} {subject}")
    return bury(lines, planted)


def _tests(
    seed: int, count: int, modules: list[str], words: list[str], runner: str, summary: str
) -> str:
    rng = random.Random(seed)
    lines = []
    for i in range(count):
        name = f"{rng.choice(words)} {rng.choice(words)} {rng.choice(words)}"
        if runner == "jest":
            lines.append(f"  {'✓'} {name} ({rng.randint(1, 180)} ms)")
            if i % 12 == 0:
                lines.append(f"PASS {rng.choice(modules)}")
        elif runner == "gradle":
            lines.append(f"{rng.choice(modules)} > {name.replace(' ', '_')}_{i}() PASSED")
        elif runner == "dotnet":
            lines.append(
                f"  Passed {rng.choice(modules)}.{name.title().replace(' ', '')}_{i} [{rng.randint(1, 400)} ms]"
            )
        else:
            lines.append(
                f"{rng.choice(modules)}::test_{name.replace(' ', '_')}_{i} PASSED [{100 * (i + 1) // count:3d}%]"
            )
    lines.append(summary)
    return "\n".join(lines)


# -- k1: a GraphQL N+1 regression in a Node API ------------------------------------------------

_GQL = "/home/dev/storefront-graph"
_TABLES = [
    "products",
    "variants",
    "prices",
    "media_assets",
    "categories",
    "reviews",
    "carts",
    "cart_lines",
    "promotions",
    "sellers",
    "shipping_rules",
    "tax_codes",
]


def _pg_stat(seed: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    head = [
        " calls  | total_exec_ms | mean_ms | rows    | query",
        "--------+---------------+---------+---------+------------------------------------------------------------",
    ]
    rows = []
    for _ in range(110):
        table = rng.choice(_TABLES)
        col = rng.choice(["id", "product_id", "variant_id", "seller_id", "category_id", "cart_id"])
        calls = rng.randint(900, 96000)
        mean = rng.uniform(0.05, 9.5)
        shape = rng.choice(
            [
                f"SELECT * FROM {table} WHERE {col} = $1",
                f"SELECT * FROM {table} WHERE {col} = ANY($1)",
                f"SELECT count(*) FROM {table} WHERE {col} = $1 AND deleted_at IS NULL",
                f"UPDATE {table} SET updated_at = now() WHERE id = $1",
            ]
        )
        rows.append(
            f" {calls:>6} | {calls * mean:>13.1f} | {mean:>7.2f} | {calls * rng.randint(1, 4):>7} | {shape}"
        )
    return "\n".join(head) + "\n" + bury(rows, planted) + f"\n({len(rows) + len(planted)} rows)"


def _tracing_json(seed: int, planted_queries: int) -> str:
    rng = random.Random(seed)
    resolvers = []
    offset = 1200
    for i in range(100):
        field = rng.choice(
            ["inventory", "price", "media", "seller", "rating", "badges", "variants", "shipping"]
        )
        duration = rng.randint(40_000, 9_800_000)
        resolvers.append(
            {
                "path": ["category", "products", i % 48, field],
                "parentType": "Product",
                "fieldName": field,
                "returnType": "Inventory!" if field == "inventory" else "String",
                "startOffset": offset,
                "duration": duration,
            }
        )
        offset += rng.randint(3000, 90_000)
    body = {
        "data": {"category": {"id": "cat_7731", "slug": "trail-running-shoes", "productCount": 48}},
        "extensions": {
            "tracing": {
                "version": 1,
                "startTime": "2026-12-07T14:22:09.118Z",
                "endTime": "2026-12-07T14:22:11.503Z",
                "duration": 2385114020,
                "execution": {"resolvers": resolvers},
            },
            "diagnostics": {"sqlQueries": planted_queries, "dataloaderBatches": 0, "cacheHits": 12},
        },
    }
    return json.dumps(body, indent=2)


def _bisect() -> str:
    rng = random.Random(1107)
    lines = ["Bisecting: 212 revisions left to test after this (roughly 8 steps)"]
    left = 212
    for step in range(8):
        left //= 2
        h = short_hash(rng, 40)
        lines.append(
            f"[{h}] {rng.choice(['chore: bump apollo-server', 'feat(cart): gift wrap line', 'refactor(product): split resolvers', 'test: snapshot category query', 'fix(media): webp fallback'])}"
        )
        lines.append("running 'npm run -s bench:category -- --assert-p95 400'")
        lines.append(
            f"category query p95: {rng.randint(120, 2600)} ms -> {'bad' if step % 2 else 'good'}"
        )
        lines.append(
            f"Bisecting: {left} revisions left to test after this (roughly {7 - step} steps)"
        )
    lines += [
        "a3f9d02e1c4b7788d2f0e9a61b5c3d4e7f801122 is the first bad commit",
        "commit a3f9d02e1c4b7788d2f0e9a61b5c3d4e7f801122",
        "Author: Mehmet Kaya <mehmet.kaya@storefront.dev>",
        "Date:   Tue Nov 24 16:41:07 2026 +0100",
        "",
        "    refactor(product): move inventory to its own field resolver",
        "",
        " src/graphql/resolvers/product.ts         | 41 ++++++++++++++++++-----------",
        " src/graphql/resolvers/inventory.ts       | 38 +++++++++++++++++++++++++++",
        " src/graphql/schema/product.graphql       |  6 +++--",
        " 3 files changed, 67 insertions(+), 18 deletions(-)",
        "bisect found first bad commit",
    ]
    return "\n".join(lines)


_PRODUCT_TS = """import { GraphQLResolveInfo } from 'graphql';
import { Context } from '../context';
import { inventoryFor } from './inventory';
import { priceFor } from './price';
import { mediaFor } from './media';

export const Product = {
  id: (p: ProductRow) => `prd_${p.id}`,
  title: (p: ProductRow) => p.title,
  slug: (p: ProductRow) => p.slug,
  brand: (p: ProductRow, _: unknown, ctx: Context) => ctx.loaders.brand.load(p.brand_id),
  price: (p: ProductRow, _: unknown, ctx: Context) => priceFor(ctx, p.id),
  media: (p: ProductRow, args: { first?: number }, ctx: Context) => mediaFor(ctx, p.id, args.first ?? 6),
  // moved out of the category query so product pages can ask for it alone
  inventory: (p: ProductRow, _: unknown, ctx: Context) => inventoryFor(ctx, p.id),
  stockLevel: (p: ProductRow, _: unknown, ctx: Context) =>
    inventoryFor(ctx, p.id).then((inv) => inv.available), // deprecated, still queried by iOS
  seller: (p: ProductRow, _: unknown, ctx: Context) => ctx.loaders.seller.load(p.seller_id),
  rating: (p: ProductRow, _: unknown, ctx: Context) => ctx.loaders.rating.load(p.id),
};
"""

_INVENTORY_TS = """import DataLoader from 'dataloader';
import { Context } from '../context';
import { sql } from '../db';

export interface Inventory {
  skuId: number;
  available: number;
  reserved: number;
  warehouse: string;
}

export function inventoryFor(ctx: Context, productId: number): Promise<Inventory> {
  const loader = new DataLoader<number, Inventory>(async (ids) => {
    const rows = await sql<Inventory>(
      'SELECT sku_id AS "skuId", available, reserved, warehouse FROM inventory_levels WHERE sku_id = ANY($1)',
      [ids],
    );
    const byId = new Map(rows.map((r) => [r.skuId, r]));
    return ids.map((id) => byId.get(id) ?? { skuId: id, available: 0, reserved: 0, warehouse: 'none' });
  });
  return loader.load(productId);
}
"""

_CONTEXT_TS = """import DataLoader from 'dataloader';
import { Request } from 'express';
import { brandsByIds, sellersByIds, ratingsByProductIds } from './batch';

export interface Context {
  user?: { id: string; roles: string[] };
  requestId: string;
  loaders: {
    brand: DataLoader<number, Brand>;
    seller: DataLoader<number, Seller>;
    rating: DataLoader<number, Rating>;
  };
}

export function buildContext({ req }: { req: Request }): Context {
  return {
    user: req.user,
    requestId: String(req.headers['x-request-id'] ?? ''),
    loaders: {
      brand: new DataLoader(brandsByIds),
      seller: new DataLoader(sellersByIds),
      rating: new DataLoader(ratingsByProductIds),
    },
  };
}

// subscriptions (graphql-ws) call buildContext from onConnect with a fake req
"""


def _schema(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "# product.graphql: product and inventory types",
        "type Product {",
        "  id: ID!",
        "  title: String!",
        "  slug: String!",
    ]
    for i in range(70):
        name = f"{rng.choice(['care', 'spec', 'fit', 'size', 'drop', 'weight', 'stack', 'lug'])}{rng.choice(['Info', 'Note', 'Label', 'Guide', 'Code'])}{i}"
        lines.append(f"  {name}: String @cacheControl(maxAge: {rng.choice([30, 60, 300])})")
    lines += [
        "  inventory: Inventory!",
        '  stockLevel: Int @deprecated(reason: "use inventory.available")',
        "}",
        "",
        "type Inventory {",
        "  available: Int!",
        "  reserved: Int!",
        "  warehouse: String!",
        "}",
    ]
    return "\n".join(lines)


def _k6(seed: int, p95: str, p99: str, reqs: str) -> str:
    rng = random.Random(seed)
    lines = [
        "          /\\      |‾‾| /‾‾/   /‾‾/",
        "     /\\  /  \\     |  |/  /   /  /",
        "    /  \\/    \\    |     (   /   ‾‾\\",
        "   /          \\   |  |\\  \\ |  (‾)  |",
        "  / __________ \\  |__| \\__\\ \\_____/ .io",
        "",
        "  execution: local",
        "     script: bench/category.js",
        "     output: -",
        "",
        "  scenarios: (100.00%) 1 scenario, 60 max VUs, 2m30s max duration (incl. graceful stop):",
        "           * category: 60 looping VUs for 2m0s (gracefulStop: 30s)",
        "",
    ]
    for i in range(60):
        lines.append(
            f"running (0m{i * 2:02d}.0s), {rng.randint(55, 60):02d}/60 VUs, {rng.randint(40, 9000)} complete and 0 interrupted iterations"
        )
    lines += [
        "",
        "     ✓ status is 200",
        "     ✓ no errors in body",
        "",
        f"     checks.........................: 100.00% ✓ {rng.randint(9000, 30000)}      ✗ 0",
        f"     data_received..................: {rng.randint(90, 900)} MB {rng.uniform(1, 9):.1f} MB/s",
        f"     data_sent......................: {rng.randint(3, 30)} MB  {rng.uniform(50, 300):.0f} kB/s",
        "     http_req_blocked...............: avg=9.1µs   min=1µs     med=4µs    max=3.2ms    p(90)=7µs     p(95)=9µs",
        "     http_req_connecting............: avg=2.2µs   min=0s      med=0s     max=1.9ms    p(90)=0s      p(95)=0s",
        f"     http_req_duration..............: avg={rng.uniform(10, 900):.2f}ms med={rng.uniform(10, 600):.2f}ms p(90)={rng.uniform(20, 900):.2f}ms p(95)={p95} p(99)={p99}",
        "     http_req_receiving.............: avg=118.4µs min=21µs    med=87µs   max=11.8ms   p(90)=201µs   p(95)=288µs",
        "     http_req_sending...............: avg=27.9µs  min=6µs     med=19µs   max=2.7ms    p(90)=44µs    p(95)=61µs",
        f"     http_req_waiting...............: avg={rng.uniform(10, 900):.2f}ms med={rng.uniform(10, 600):.2f}ms p(90)={rng.uniform(20, 900):.2f}ms",
        f"     http_reqs......................: {reqs}",
        f"     iteration_duration.............: avg={rng.uniform(10, 900):.2f}ms",
        "     vus............................: 60     min=60       max=60",
    ]
    return "\n".join(lines)


def _grep_loaders(seed: int) -> str:
    rng = random.Random(seed)
    files = [
        "batch.ts",
        "context.ts",
        "resolvers/seller.ts",
        "resolvers/media.ts",
        "resolvers/price.ts",
        "resolvers/reviews.ts",
        "resolvers/cart.ts",
        "resolvers/promotions.ts",
    ]
    lines = []
    for _ in range(46):
        f = rng.choice(files)
        lines.append(
            f"{_GQL}/src/graphql/{f}:{rng.randint(3, 140)}:    {rng.choice(['brand', 'seller', 'rating', 'media', 'price', 'promo'])}: new DataLoader({rng.choice(['brandsByIds', 'sellersByIds', 'ratingsByProductIds', 'mediaByProductIds', 'pricesByIds', 'promosByIds'])}),"
        )
    lines.insert(
        23,
        f"{_GQL}/src/graphql/resolvers/inventory.ts:13:  const loader = new DataLoader<number, Inventory>(async (ids) => {{",
    )
    return "\n".join(lines)


_K1_FACTS = [
    Fact("person", ("Kwame Asante", "SRE"), "the SRE on call who was paged"),
    Fact(
        "person",
        ("Ingrid Solberg", "API platform"),
        "staff engineer who signs off resolver changes",
    ),
    Fact("number", ("14:05",), "deploy time the regression started, said once"),
    Fact("number", ("38,000",), "SKU count in the catalog, said once in passing"),
    Fact("tool_output", ("418223",), "calls to the per-SKU inventory query in pg_stat_statements"),
    Fact("tool_output", ("1187",), "SQL queries for one category request, tracing JSON only"),
    Fact("tool_output", ("a3f9d02e1",), "first bad commit from git bisect"),
    Fact("conclusion", ("fresh DataLoader",), "why batching never happened"),
    Fact("constraint", ("stockLevel", "5.12"), "iOS 5.12 still queries the deprecated field"),
    Fact(
        "constraint", ("2 seconds", "Redis"), "inventory may not be cached in Redis over 2 seconds"
    ),
    Fact("number", ("maxBatchSize: 250",), "batch size, the corrected value"),
    Fact(
        "decision",
        ("buildContext", "subscriptions"),
        "loaders built in buildContext because subscriptions share it",
    ),
    Fact("decision", ("graph_inventory_loader",), "flag name, the later one"),
    Fact("path", ("src/graphql/loaders/inventoryLoader.ts",), "new loader module written"),
    Fact("tool_output", ("41.09ms",), "p95 after the fix in the k6 summary, restated only roughly"),
]

K1 = Session(
    "k1-graphql-n-plus-one",
    [
        U(
            f"The category page query on the storefront graph got slow after Tuesday's deploy, the one that went out at 14:05. Kwame Asante is on call for SRE this week and got paged for it twice overnight. Repo is {_GQL}. Can you find out what happened?"
        ),
        A(
            "Starting with the database side: if a resolver went N+1, pg_stat_statements will show a per-row query with a huge call count. I'll also pull the recent history.",
            Call(
                "Bash",
                {
                    "command": 'psql "$CATALOG_RO_URL" -c "SELECT calls, round(total_exec_time) AS total_exec_ms, round(mean_exec_time::numeric, 2) AS mean_ms, rows, left(query, 60) AS query FROM pg_stat_statements ORDER BY calls DESC LIMIT 120"',
                    "description": "Top statements by call count on the catalog replica",
                },
                _pg_stat(
                    1101,
                    {
                        0.43: ' 418223 |      612044.9 |    1.46 |  418223 | SELECT sku_id AS "skuId", available, reserved, warehouse FROM inventory_levels WHERE sku_id = ANY($1)',
                    },
                ),
            ),
            Call(
                "Bash",
                {
                    "command": "git log --format='%h %an %ad %s' --date=short -n 90",
                    "description": "Recent commits",
                },
                _git_log(
                    1102,
                    90,
                    ["Mehmet Kaya", "Lucas Ferreira", "Ana Petrova", "dependabot[bot]"],
                    [
                        "fix(cart): rounding on line {n}",
                        "chore(deps): bump graphql to 16.{n}",
                        "feat(search): facet #{n}",
                        "test: snapshot update {n}",
                        "refactor(media): thumbnails #{n}",
                        "docs: schema notes {n}",
                    ],
                    {},
                ),
            ),
        ),
        A(
            "One statement stands far above the rest: the inventory lookup with `ANY($1)` ran hundreds of thousands of times, and its rows equal its calls, so each call fetched a single SKU. That is a batch query being fed batches of one. Let me see what a single category request does.",
            Call(
                "Bash",
                {
                    "command": "curl -s -H 'apollo-require-preflight: true' -H 'x-debug-tracing: 1' localhost:4000/graphql -d @bench/category-query.json | jq .",
                    "description": "Run the category query with tracing on",
                },
                _tracing_json(1103, 1187),
            ),
        ),
        A(
            "The request took about 2.4 seconds and every `inventory` field shows up as its own resolver call with no batches at all (dataloaderBatches is 0). Bisecting against the category benchmark to find the commit.",
            Call(
                "Bash",
                {
                    "command": "git bisect start HEAD v2026.11.20 && git bisect run npm run -s bench:category -- --assert-p95 400",
                    "description": "Bisect the category p95 regression",
                },
                _bisect(),
            ),
        ),
        A(
            "Reading the commit's files together with the request context.",
            Call(
                "Read",
                {"file_path": f"{_GQL}/src/graphql/resolvers/product.ts"},
                numbered(_PRODUCT_TS),
            ),
            Call(
                "Read",
                {"file_path": f"{_GQL}/src/graphql/resolvers/inventory.ts"},
                numbered(_INVENTORY_TS),
            ),
            Call("Read", {"file_path": f"{_GQL}/src/graphql/context.ts"}, numbered(_CONTEXT_TS)),
        ),
        A(
            "Found it. `inventoryFor` constructs a new loader on every call, so each product's inventory gets a fresh DataLoader whose batch only ever holds that one product's id. The batching function is correct; it just never sees more than one key. Before Mehmet's refactor the category resolver fetched inventory for all 48 products in one query, which is why nothing showed up in review. With around 38,000 SKUs in the catalog the crawlers that walk every category make it much worse."
        ),
        U(
            "Ok. Ingrid Solberg is the staff engineer on the API platform team and she has to sign off anything under src/graphql/resolvers, so keep the diff tidy. Two things you can't do: stockLevel has to keep working because iOS 5.12 is still out there querying it, and the data team won't allow inventory to be cached in Redis for more than 2 seconds, so no caching shortcut."
        ),
        A(
            "Understood; the fix stays inside the graph and keeps `stockLevel`. Checking how the other loaders are wired and the schema.",
            Call(
                "Grep",
                {
                    "pattern": "new DataLoader",
                    "path": f"{_GQL}/src",
                    "output_mode": "content",
                    "-n": True,
                },
                _grep_loaders(1104),
            ),
            Call(
                "Read",
                {"file_path": f"{_GQL}/src/graphql/schema/product.graphql"},
                numbered(_schema(1105)),
            ),
            Call(
                "Glob",
                {"pattern": "src/graphql/loaders/*.ts", "path": _GQL},
                f"{_GQL}/src/graphql/loaders/brand.ts\n{_GQL}/src/graphql/loaders/seller.ts\n{_GQL}/src/graphql/loaders/rating.ts\n{_GQL}/src/graphql/loaders/index.ts",
            ),
        ),
        U("Should the loader go into the Apollo context or in a WeakMap keyed by the request?"),
        A(
            "Into the context, built in buildContext like brand and seller. The reason is subscriptions: graphql-ws calls buildContext from onConnect with a fake request, so a WeakMap keyed on the Express request would silently share one loader across a whole websocket connection. Building it in buildContext gives HTTP and subscriptions the same per-operation lifetime."
        ),
        A(
            "Writing the loader module and wiring it in. I'll cap batches with maxBatchSize: 500 to keep the array parameter reasonable.",
            Call(
                "Write",
                {
                    "file_path": f"{_GQL}/src/graphql/loaders/inventoryLoader.ts",
                    "content": "import DataLoader from 'dataloader';\nimport { sql } from '../db';\nimport type { Inventory } from '../resolvers/inventory';\n\nexport function inventoryLoader(): DataLoader<number, Inventory> {\n  return new DataLoader(\n    async (ids) => {\n      const rows = await sql<Inventory>(\n        'SELECT sku_id AS \"skuId\", available, reserved, warehouse FROM inventory_levels WHERE sku_id = ANY($1)',\n        [ids],\n      );\n      const byId = new Map(rows.map((r) => [r.skuId, r]));\n      return ids.map((id) => byId.get(id) ?? { skuId: id, available: 0, reserved: 0, warehouse: 'none' });\n    },\n    { maxBatchSize: 500 },\n  );\n}\n",
                },
                written(f"{_GQL}/src/graphql/loaders/inventoryLoader.ts"),
            ),
            Call(
                "MultiEdit",
                {
                    "file_path": f"{_GQL}/src/graphql/context.ts",
                    "edits": [
                        {
                            "old_string": "import { brandsByIds, sellersByIds, ratingsByProductIds } from './batch';",
                            "new_string": "import { brandsByIds, sellersByIds, ratingsByProductIds } from './batch';\nimport { inventoryLoader } from './loaders/inventoryLoader';",
                        },
                        {
                            "old_string": "      rating: new DataLoader(ratingsByProductIds),",
                            "new_string": "      rating: new DataLoader(ratingsByProductIds),\n      inventory: inventoryLoader(),",
                        },
                    ],
                },
                edited(
                    f"{_GQL}/src/graphql/context.ts",
                    "      rating: new DataLoader(ratingsByProductIds),\n      inventory: inventoryLoader(),\n    },\n  };\n}",
                    24,
                ),
            ),
            Call(
                "Edit",
                {
                    "file_path": f"{_GQL}/src/graphql/resolvers/inventory.ts",
                    "old_string": "  const loader = new DataLoader<number, Inventory>(async (ids) => {",
                    "new_string": "  if (flags.enabled('inventory_batching')) return ctx.loaders.inventory.load(productId);\n  const loader = new DataLoader<number, Inventory>(async (ids) => {",
                },
                edited(
                    f"{_GQL}/src/graphql/resolvers/inventory.ts",
                    "export function inventoryFor(ctx: Context, productId: number): Promise<Inventory> {\n  if (flags.enabled('inventory_batching')) return ctx.loaders.inventory.load(productId);\n  const loader = new DataLoader<number, Inventory>(async (ids) => {",
                    12,
                ),
            ),
        ),
        A(
            "Running the resolver tests.",
            Call(
                "Bash",
                {
                    "command": "npx jest src/graphql --silent=false",
                    "description": "Graph resolver tests",
                },
                _tests(
                    1106,
                    210,
                    [
                        "src/graphql/resolvers/product.test.ts",
                        "src/graphql/resolvers/cart.test.ts",
                        "src/graphql/loaders/loaders.test.ts",
                    ],
                    [
                        "resolves",
                        "batches",
                        "category",
                        "product",
                        "inventory",
                        "price",
                        "seller",
                        "returns",
                        "caches",
                        "media",
                    ],
                    "jest",
                    "Test Suites: 31 passed, 31 total\nTests:       214 passed, 214 total\nSnapshots:   12 passed, 12 total\nTime:        19.874 s",
                ),
            ),
        ),
        A(
            "A correction on the batch size I wrote a moment ago: the replica's planner switches `ANY($1)` to a sequential scan on inventory_levels once the array passes about 300 ids (the EXPLAIN in docs/db/inventory-plans.md shows it), so 500 was wrong. The loader now uses maxBatchSize: 250.",
            Call(
                "Edit",
                {
                    "file_path": f"{_GQL}/src/graphql/loaders/inventoryLoader.ts",
                    "old_string": "    { maxBatchSize: 500 },",
                    "new_string": "    { maxBatchSize: 250 }, // ANY($1) flips to a seq scan past ~300 ids",
                },
                edited(
                    f"{_GQL}/src/graphql/loaders/inventoryLoader.ts",
                    "      return ids.map((id) => byId.get(id) ?? { skuId: id, available: 0, reserved: 0, warehouse: 'none' });\n    },\n    { maxBatchSize: 250 }, // ANY($1) flips to a seq scan past ~300 ids\n  );\n}",
                    13,
                ),
            ),
        ),
        A(
            "Benchmarking the category query with the flag on.",
            Call(
                "Bash",
                {
                    "command": "INVENTORY_BATCHING=1 k6 run bench/category.js",
                    "description": "k6 category benchmark, batching on",
                },
                _k6(1108, "41.09ms", "77.52ms", "31874  265.6/s"),
            ),
            Call(
                "Bash",
                {
                    "command": "k6 run bench/category.js",
                    "description": "k6 category benchmark, batching off",
                },
                _k6(1109, "2318.66ms", "2903.12ms", "2211   18.4/s"),
            ),
        ),
        A(
            "With batching the p95 is around 40 ms against more than two seconds without it, and throughput went up roughly fourteen-fold. The tracing JSON for the same request now reports 4 SQL queries."
        ),
        U(
            "Nice. One thing: the flags service rejects new flag names that don't start with the service prefix, so inventory_batching won't be accepted."
        ),
        A(
            "Renaming it. The flag is now graph_inventory_loader, which is what I'll put in the PR description for Ingrid.",
            Call(
                "Edit",
                {
                    "file_path": f"{_GQL}/src/graphql/resolvers/inventory.ts",
                    "old_string": "flags.enabled('inventory_batching')",
                    "new_string": "flags.enabled('graph_inventory_loader')",
                },
                edited(
                    f"{_GQL}/src/graphql/resolvers/inventory.ts",
                    "  if (flags.enabled('graph_inventory_loader')) return ctx.loaders.inventory.load(productId);",
                    13,
                ),
            ),
            Call(
                "Bash",
                {
                    "command": "npx jest src/graphql && npx tsc --noEmit",
                    "description": "Tests and typecheck after the rename",
                },
                _tests(
                    1110,
                    160,
                    [
                        "src/graphql/resolvers/product.test.ts",
                        "src/graphql/loaders/loaders.test.ts",
                    ],
                    [
                        "resolves",
                        "batches",
                        "flag",
                        "inventory",
                        "stock",
                        "level",
                        "returns",
                        "category",
                    ],
                    "jest",
                    "Test Suites: 31 passed, 31 total\nTests:       216 passed, 216 total\nSnapshots:   12 passed, 12 total\nTime:        18.102 s",
                ),
            ),
        ),
        A(
            "Done. In short: Mehmet's refactor moved inventory into a field resolver that built its loader per call, so the batch function was handed one id at a time. The loader now lives in the request context (maxBatchSize 250), `stockLevel` still resolves through it, nothing is cached in Redis, and the behaviour is behind graph_inventory_loader. Tests and typecheck pass."
        ),
    ],
    _K1_FACTS,
)


# -- k2: a .NET solution whose Windows build breaks on path length -----------------------------

_NET = "/c/src/contoso-logistics"
_AGENT = "D:\\a\\_work\\17\\s"
_PROJECTS = [
    "Contoso.Logistics.Routing.Optimization",
    "Contoso.Logistics.Routing.Optimization.Integration.Tests",
    "Contoso.Logistics.Warehouse.Slotting",
    "Contoso.Logistics.Warehouse.Slotting.Tests",
    "Contoso.Logistics.Carriers.Adapters.FedEx",
    "Contoso.Logistics.Carriers.Adapters.Ups",
    "Contoso.Logistics.Tracking.Notifications",
    "Contoso.Logistics.Tracking.Notifications.Tests",
    "Contoso.Logistics.Desktop.Dispatcher",
    "Contoso.Logistics.Desktop.Dispatcher.Packaging",
    "Contoso.Logistics.Shared.Contracts",
    "Contoso.Logistics.Shared.Telemetry",
]
_TFMS = ["net8.0", "net8.0-windows10.0.19041.0", "netstandard2.0"]


def _msbuild_log(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "MSBuild version 17.11.9+a69bbaaf5 for .NET",
        "  Determining projects to restore...",
    ]
    for p in _PROJECTS:
        lines.append(f"  Restored {_AGENT}\\src\\{p}\\{p}.csproj (in {rng.randint(200, 4000)} ms).")
    for _ in range(140):
        p = rng.choice(_PROJECTS)
        tfm = rng.choice(_TFMS)
        kind = rng.random()
        if kind < 0.55:
            lines.append(f"  {p} -> {_AGENT}\\src\\{p}\\bin\\Release\\{tfm}\\{p}.dll")
        elif kind < 0.9:
            code, msg = rng.choice(
                [
                    (
                        "CS8618",
                        "Non-nullable property 'Carrier' must contain a non-null value when exiting constructor.",
                    ),
                    (
                        "CS0618",
                        "'HttpClientHandler.ServerCertificateCustomValidationCallback' is obsolete",
                    ),
                    ("CA1848", "For improved performance, use the LoggerMessage delegates"),
                    (
                        "NU1603",
                        "Microsoft.Extensions.Http 8.0.0 depends on System.Diagnostics.DiagnosticSource (>= 8.0.0) but 8.0.0 was not found.",
                    ),
                ]
            )
            lines.append(
                f"{_AGENT}\\src\\{p}\\{rng.choice(['Services', 'Models', 'Adapters', 'Handlers'])}\\{rng.choice(['Route', 'Slot', 'Label', 'Parcel'])}{rng.randint(1, 60)}.cs({rng.randint(10, 400)},{rng.randint(5, 60)}): warning {code}: {msg} [{_AGENT}\\src\\{p}\\{p}.csproj::TargetFramework={tfm}]"
            )
        else:
            lines.append(
                f'  Copying file from "{_AGENT}\\src\\{p}\\obj\\Release\\{tfm}\\{p}.pdb" to "{_AGENT}\\src\\{p}\\bin\\Release\\{tfm}\\{p}.pdb".'
            )
    deep = "Contoso.Logistics.Desktop.Dispatcher.Packaging"
    lines.insert(
        97,
        f"C:\\Program Files\\dotnet\\sdk\\8.0.404\\Sdks\\Microsoft.NET.Sdk\\targets\\Microsoft.PackageDependencyResolution.targets(266,5): error NETSDK1064: Package Microsoft.WindowsAppSDK, version 1.5.240802000 was not found. It might have been deleted since NuGet restore. Otherwise, NuGet restore might have only partially completed, which might have been due to maximum path length restrictions. [{_AGENT}\\src\\{deep}\\{deep}.wapproj]",
    )
    lines.insert(
        98,
        f"C:\\Program Files (x86)\\Windows Kits\\10\\bin\\10.0.19041.0\\x64\\makeappx.exe : error APPX1101: Payload contains two or more files with the same destination path, or the path is longer than MAX_PATH: '{_AGENT}\\src\\{deep}\\obj\\Release\\net8.0-windows10.0.19041.0\\win-x64\\AppxManifest.xml' [{_AGENT}\\src\\{deep}\\{deep}.wapproj]",
    )
    lines += [
        "",
        "Build FAILED.",
        "",
        f"    {rng.randint(80, 140)} Warning(s)",
        "    2 Error(s)",
        "",
        "Time Elapsed 00:07:42.18",
    ]
    return "\n".join(lines)


def _longest_paths(seed: int) -> str:
    rng = random.Random(seed)
    rows = []
    for _ in range(140):
        p = rng.choice(_PROJECTS)
        tail = rng.choice(
            [
                f"obj/Release/{rng.choice(_TFMS)}/{p}.AssemblyInfo.cs",
                f"obj/Debug/{rng.choice(_TFMS)}/{p}.GlobalUsings.g.cs",
                f"obj/Release/{rng.choice(_TFMS)}/refint/{p}.dll",
                f"bin/Debug/{rng.choice(_TFMS)}/{p}.deps.json",
                f"obj/Release/{rng.choice(_TFMS)}/{p}.csproj.CoreCompileInputs.cache",
            ]
        )
        rows.append(f"src/{p}/{tail}")
    rows.append(
        "src/Contoso.Logistics.Desktop.Dispatcher.Packaging/obj/Debug/net8.0-windows10.0.19041.0/win-x64/PackageLayout/Contoso.Logistics.Desktop.Dispatcher/Microsoft.WindowsAppRuntime.Bootstrap.Net.dll"
    )
    rows.append(
        "src/Contoso.Logistics.Desktop.Dispatcher.Packaging/obj/Release/net8.0-windows10.0.19041.0/win-x64/PackageLayout/Contoso.Logistics.Desktop.Dispatcher/resources.pri"
    )
    measured = {rows[-2]: 312 - 18, rows[-1]: 297 - 18}  # agent prefix added below
    sized = sorted(((measured.get(r, len(r)) + 18, r) for r in rows), reverse=True)
    return "\n".join(f"{n:>4} {_AGENT}\\{r.replace('/', chr(92))}" for n, r in sized)


def _dotnet_info() -> str:
    return "\n".join(
        [
            ".NET SDK:",
            " Version:           8.0.404",
            " Commit:            7b190310f2",
            " Workload version:  8.0.400-manifests.6c274a57",
            " MSBuild version:   17.11.9+a69bbaaf5",
            "",
            "Runtime Environment:",
            " OS Name:     Windows",
            " OS Version:  10.0.20348",
            " OS Platform: Windows",
            " RID:         win-x64",
            " Base Path:   C:\\Program Files\\dotnet\\sdk\\8.0.404\\",
            "",
            ".NET workloads installed:",
            " [maui-windows]",
            "   Installation Source: SDK 8.0.400",
            "   Manifest Version:    8.0.82/8.0.100",
            "   Manifest Path:       C:\\Program Files\\dotnet\\sdk-manifests\\8.0.100\\microsoft.net.sdk.maui\\8.0.82\\WorkloadManifest.json",
            "   Install Type:        Msi",
            "",
            "Host:",
            "  Version:      8.0.11",
            "  Architecture: x64",
            "  Commit:       9cb3b725e3",
            "",
            ".NET SDKs installed:",
            "  6.0.428 [C:\\Program Files\\dotnet\\sdk]",
            "  7.0.410 [C:\\Program Files\\dotnet\\sdk]",
            "  8.0.110 [C:\\Program Files\\dotnet\\sdk]",
            "  8.0.404 [C:\\Program Files\\dotnet\\sdk]",
            "",
            ".NET runtimes installed:",
            "  Microsoft.AspNetCore.App 6.0.36 [C:\\Program Files\\dotnet\\shared\\Microsoft.AspNetCore.App]",
            "  Microsoft.AspNetCore.App 8.0.11 [C:\\Program Files\\dotnet\\shared\\Microsoft.AspNetCore.App]",
            "  Microsoft.NETCore.App 6.0.36 [C:\\Program Files\\dotnet\\shared\\Microsoft.NETCore.App]",
            "  Microsoft.NETCore.App 8.0.11 [C:\\Program Files\\dotnet\\shared\\Microsoft.NETCore.App]",
            "  Microsoft.WindowsDesktop.App 8.0.11 [C:\\Program Files\\dotnet\\shared\\Microsoft.WindowsDesktop.App]",
            "",
            "Other architectures found:",
            "  x86   [C:\\Program Files (x86)\\dotnet]",
            "    registered at [HKLM\\SOFTWARE\\dotnet\\Setup\\InstalledVersions\\x86\\InstallLocation]",
            "",
            "Environment variables:",
            "  Not set",
            "",
            "global.json file:",
            "  C:\\src\\contoso-logistics\\global.json",
        ]
    )


def _perf_summary(seed: int) -> str:
    rng = random.Random(seed)
    tasks = [
        "Csc",
        "Copy",
        "MSBuild",
        "ResolvePackageAssets",
        "GenerateDepsFile",
        "WriteLinesToFile",
        "Touch",
        "MakeDir",
        "ProcessFrameworkReferences",
        "GetPackageDirectory",
        "AssignTargetPath",
        "FindUnderPath",
        "CreateItem",
        "Message",
        "ConvertToAbsolutePath",
        "Hash",
        "GenerateResource",
        "XamlPreCompile",
        "ExpandPayloadDirectories",
        "GetAppxPackagePayload",
    ]
    lines = ["Target Performance Summary:"]
    for _ in range(55):
        lines.append(
            f"{rng.randint(0, 30000):>10} ms  {rng.choice(['_CopyFilesMarkedCopyLocal', 'CoreCompile', 'ResolveProjectReferences', 'GenerateBuildDependencyFile', '_GenerateAppxPackage', 'IncrementalClean', 'PrepareForBuild', 'GetCopyToOutputDirectoryItems', '_HandlePackageFileConflicts', 'ResolveTargetingPackAssets']):<40} {rng.randint(1, 400):>4} calls"
        )
    lines += ["", "Task Performance Summary:"]
    task_rows = [
        f"{rng.randint(0, 30000):>10} ms  {rng.choice(tasks):<40} {rng.randint(1, 900):>4} calls"
        for _ in range(60)
    ]
    lines.append(
        bury(
            task_rows, {0.38: "     48312 ms  ResolveAssemblyReferences                 412 calls"}
        )
    )
    lines.append("")
    lines.append("Build succeeded.")
    return "\n".join(lines)


def _sln(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "Microsoft Visual Studio Solution File, Format Version 12.00",
        "# Visual Studio Version 17",
        "VisualStudioVersion = 17.11.35327.3",
        "MinimumVisualStudioVersion = 10.0.40219.1",
    ]
    for p in _PROJECTS:
        guid = "-".join(short_hash(rng, n).upper() for n in (8, 4, 4, 4, 12))
        lines.append(
            f'Project("{{9A19103F-16F7-4668-BE54-9A1E7A4F7556}}") = "{p}", "src\\{p}\\{p}.csproj", "{{{guid}}}"'
        )
        lines.append("EndProject")
    lines.append("Global")
    lines.append("\tGlobalSection(ProjectConfigurationPlatforms) = postSolution")
    for _ in range(70):
        guid = "-".join(short_hash(rng, n).upper() for n in (8, 4, 4, 4, 12))
        cfg = rng.choice(["Debug|Any CPU", "Release|Any CPU", "Debug|x64", "Release|x64"])
        lines.append(
            f"\t\t{{{guid}}}.{cfg}.{rng.choice(['ActiveCfg', 'Build.0', 'Deploy.0'])} = {cfg}"
        )
    lines += ["\tEndGlobalSection", "EndGlobal"]
    return "\n".join(lines)


_PROPS = """<Project>
  <PropertyGroup>
    <LangVersion>12.0</LangVersion>
    <Nullable>enable</Nullable>
    <TreatWarningsAsErrors>false</TreatWarningsAsErrors>
    <AnalysisLevel>latest-recommended</AnalysisLevel>
    <Company>Contoso Logistics</Company>
    <Copyright>Contoso Ltd.</Copyright>
    <RepositoryUrl>https://dev.azure.com/contoso/logistics/_git/contoso-logistics</RepositoryUrl>
    <ContinuousIntegrationBuild Condition="'$(TF_BUILD)' == 'true'">true</ContinuousIntegrationBuild>
    <Deterministic>true</Deterministic>
    <EnableNETAnalyzers>true</EnableNETAnalyzers>
  </PropertyGroup>
  <ItemGroup>
    <PackageReference Include="Microsoft.SourceLink.AzureRepos.Git" Version="8.0.0" PrivateAssets="All" />
  </ItemGroup>
</Project>
"""

_PIPELINE = """trigger:
  branches:
    include: [main, release/*]

schedules:
  - cron: "0 1 * * *"
    displayName: nightly
    branches:
      include: [main]

pool:
  name: contoso-win-2022   # self-hosted, images owned by corporate IT

variables:
  buildConfiguration: Release
  DOTNET_CLI_TELEMETRY_OPTOUT: 1

steps:
  - checkout: self
    fetchDepth: 1
  - task: UseDotNet@2
    inputs:
      useGlobalJson: true
  - script: dotnet restore Contoso.Logistics.sln
  - script: dotnet build Contoso.Logistics.sln -c $(buildConfiguration) --no-restore -bl:$(Build.ArtifactStagingDirectory)/build.binlog
  - script: dotnet test Contoso.Logistics.sln -c $(buildConfiguration) --no-build --logger trx
  - task: PowerShell@2
    displayName: sign packages
    inputs:
      filePath: eng/sign.ps1
      arguments: -Include 'artifacts/**/*.msix'
  - publish: artifacts
    artifact: drop
"""

_K2_FACTS = [
    Fact("person", ("Beatriz Nunes", "agent pool"), "build engineer who runs the agent pool"),
    Fact("person", ("Olu Adeyemi", "release manager"), "release manager waiting on the nightly"),
    Fact("number", ("6 days",), "how long the nightly has been red, said once"),
    Fact("number", ("December 15",), "release branch cut date, said once"),
    Fact(
        "tool_output",
        ("00:07:42.18",),
        "MSBuild elapsed time, restated only as 'nearly eight minutes'",
    ),
    Fact("tool_output", ("8.0.404",), "SDK version, only in dotnet --info and the error path"),
    Fact("tool_output", ("48312 ms",), "ResolveAssemblyReferences in the task performance summary"),
    Fact("number", ("297 characters",), "longest Release path, the corrected value"),
    Fact(
        "conclusion", ("22 characters",), "the agent's work directory is longer than a dev checkout"
    ),
    Fact(
        "constraint",
        ("LongPathsEnabled", "group policy"),
        "the registry switch can't be flipped on the agents",
    ),
    Fact(
        "constraint",
        ("*.msix", "signing"),
        "packages must stay under artifacts/ for the signing glob",
    ),
    Fact(
        "decision",
        ("UseArtifactsOutput",),
        "artifacts output layout, answered to the user's question",
    ),
    Fact("decision", ("Contoso.Routing.ITests",), "test project's short name, the later one"),
    Fact("path", ("eng/ShortPaths.targets",), "targets file written"),
]

K2 = Session(
    "k2-dotnet-long-paths",
    [
        U(
            f"Our nightly Windows build of Contoso.Logistics.sln has been red for 6 days and Olu Adeyemi, who is the release manager for the desktop dispatcher, needs it green before the release branch is cut on December 15. It builds fine on my machine. The repo is checked out at {_NET}. Here's the failing log from the agent."
        ),
        A(
            "Reading the agent's build log and the pipeline definition together.",
            Call(
                "shell",
                codex_shell("cat .pipelines/nightly-logs/build.log", _NET),
                codex_text(_msbuild_log(1201), seconds=0.3),
            ),
            Call(
                "shell",
                codex_shell("cat azure-pipelines.yml", _NET),
                codex_json(_PIPELINE, seconds=0.1),
            ),
        ),
        A(
            "Two errors, both in the packaging project: NuGet restore hinting at maximum path length and makeappx rejecting a payload path longer than MAX_PATH. The build ran for nearly eight minutes before failing. Checking the SDK on the agent and measuring the longest paths the build creates.",
            Call(
                "shell",
                codex_shell("cat .pipelines/nightly-logs/dotnet-info.txt", _NET),
                codex_json(_dotnet_info(), seconds=0.1),
            ),
            Call(
                "shell",
                codex_shell("cat .pipelines/nightly-logs/longest-paths.txt | head -n 142", _NET),
                codex_text(_longest_paths(1202), seconds=0.2),
            ),
        ),
        A(
            "The longest path on the agent is 312 characters, in the packaging project's PackageLayout folder, far over the 260 limit. The agent checks out to D:\\a\\_work\\17\\s while you build in C:\\src\\contoso-logistics, and that prefix is what pushes it over: locally the same file is much shorter."
        ),
        U(
            "How much longer is the agent's prefix, exactly? And which build configuration is the 312 one?"
        ),
        A(
            "Let me correct myself. The 312 is the Debug layout, which the nightly never builds; the Release payload that makeappx actually rejects is 297 characters on the agent. As for the prefix: D:\\a\\_work\\17\\s\\ is 22 characters longer than the equivalent root on a dev box once you count the repo folder name the agent drops, so any Release path over 238 characters locally breaks only on the agent. That's why it never reproduced for you."
        ),
        U(
            "Beatriz Nunes looks after the self-hosted agent pool, she says LongPathsEnabled stays off: the agent images are locked by corporate group policy and she can't change the registry on them. So we need to shorten paths ourselves."
        ),
        A(
            "Then the paths have to shrink on our side. Reading the shared props and the packaging project.",
            Call(
                "shell",
                codex_shell("cat Directory.Build.props && cat Contoso.Logistics.sln", _NET),
                codex_json(_PROPS + "\n" + _sln(1203), seconds=0.1),
            ),
        ),
        U("Would you move bin/obj with UseArtifactsOutput or just shorten project names?"),
        A(
            "UseArtifactsOutput, set once in Directory.Build.props. It moves bin and obj out of each deep project folder into artifacts/bin/<project>/<config> and artifacts/obj/..., which takes the repeated project name and the src folder out of every intermediate path. Renaming projects alone would help the one packaging project but not the test projects, which are next in the list.",
            Call(
                "apply_patch",
                codex_patch(
                    "Directory.Build.props",
                    "    <EnableNETAnalyzers>true</EnableNETAnalyzers>",
                    "    <EnableNETAnalyzers>true</EnableNETAnalyzers>\n    <UseArtifactsOutput>true</UseArtifactsOutput>\n    <ArtifactsPath>$(MSBuildThisFileDirectory)artifacts</ArtifactsPath>",
                    "<PropertyGroup>",
                ),
                codex_patched("Directory.Build.props"),
            ),
        ),
        U(
            "Careful with where the packages land: the signing step only signs what matches artifacts/**/*.msix, and anything that isn't signed gets rejected by the store."
        ),
        A(
            "The artifacts layout puts packages under artifacts/package/release, which that glob still matches, so signing is unaffected. For the package layout itself, which is what makeappx trips on, I'm adding a targets file that points the intermediate layout at a short folder.",
            Call(
                "shell",
                codex_shell(
                    "mkdir -p eng && cat > eng/ShortPaths.targets <<'EOF'\n<Project>\n  <!-- makeappx still has a MAX_PATH limit; keep the layout shallow -->\n  <PropertyGroup Condition=\"'$(MSBuildProjectExtension)' == '.wapproj'\">\n    <AppxPackageDir>$(ArtifactsPath)\\package\\$(Configuration.ToLowerInvariant())\\</AppxPackageDir>\n    <AppxLayoutDir>$(ArtifactsPath)\\l\\</AppxLayoutDir>\n  </PropertyGroup>\n</Project>\nEOF",
                    _NET,
                ),
                codex_json("", seconds=0.1),
            ),
            Call(
                "apply_patch",
                codex_patch(
                    "Directory.Build.targets",
                    "</Project>",
                    '  <Import Project="eng/ShortPaths.targets" />\n</Project>',
                ),
                codex_patched("Directory.Build.targets"),
            ),
        ),
        A(
            "Rebuilding under a work folder as deep as the agent's to check, with a binary log.",
            Call(
                "shell",
                codex_shell(
                    "subst X: /d /a/_work/17/s_sim && cd /x && dotnet build Contoso.Logistics.sln -c Release -bl -clp:PerformanceSummary | tail -n 130",
                    _NET,
                ),
                codex_text(_perf_summary(1204), seconds=402.7),
            ),
        ),
        A(
            "It builds at agent depth now. The performance summary also shows ResolveAssemblyReferences as the single most expensive task at close to fifty seconds, which is a separate thing for later. One test project still has a path near the limit under artifacts/obj, so I'm going to shorten its name: Contoso.Logistics.Routing.Optimization.Integration.Tests becomes Routing.Opt.IntTests."
        ),
        U(
            "Olu says test assembly names go into the test-result dashboards and they have to start with the Contoso. prefix or the dashboard filters drop them."
        ),
        A(
            "Then the short name will be Contoso.Routing.ITests instead: it keeps the prefix the dashboards filter on and is still 34 characters shorter than the original.",
            Call(
                "shell",
                codex_shell(
                    "git mv src/Contoso.Logistics.Routing.Optimization.Integration.Tests src/Contoso.Routing.ITests && git mv src/Contoso.Routing.ITests/Contoso.Logistics.Routing.Optimization.Integration.Tests.csproj src/Contoso.Routing.ITests/Contoso.Routing.ITests.csproj && dotnet sln remove src/Contoso.Logistics.Routing.Optimization.Integration.Tests/Contoso.Logistics.Routing.Optimization.Integration.Tests.csproj && dotnet sln add src/Contoso.Routing.ITests/Contoso.Routing.ITests.csproj",
                    _NET,
                ),
                codex_text(
                    "Project `src\\Contoso.Logistics.Routing.Optimization.Integration.Tests\\Contoso.Logistics.Routing.Optimization.Integration.Tests.csproj` removed from the solution.\nProject `src\\Contoso.Routing.ITests\\Contoso.Routing.ITests.csproj` added to the solution.",
                    seconds=2.1,
                ),
            ),
            Call(
                "shell",
                codex_shell(
                    "cd /x && dotnet test Contoso.Logistics.sln -c Release --no-build -v n", _NET
                ),
                codex_json(
                    _tests(
                        1205,
                        200,
                        [
                            "Contoso.Logistics.Desktop.Dispatcher.Tests",
                            "Contoso.Logistics.Warehouse.Slotting.Tests",
                            "Contoso.Logistics.Tracking.Notifications.Tests",
                        ],
                        [
                            "route",
                            "slot",
                            "parcel",
                            "label",
                            "assigns",
                            "rejects",
                            "splits",
                            "carrier",
                            "window",
                            "merges",
                        ],
                        "dotnet",
                        "Passed!  - Failed:     0, Passed:   240, Skipped:     3, Total:   243, Duration: 1 m 12 s",
                    ),
                    seconds=81.4,
                ),
            ),
        ),
        A(
            "All green at agent depth. Summary for Beatriz and Olu: the agent's checkout root is 22 characters longer than a dev box's, which pushed the packaging payload to 297 characters. Fixed on our side without touching the agents: UseArtifactsOutput in Directory.Build.props, eng/ShortPaths.targets for the package layout, and the integration test project renamed to Contoso.Routing.ITests. Signed packages still land under artifacts/ where the signing glob finds them."
        ),
    ],
    _K2_FACTS,
)


# -- k3: JVM garbage-collection pauses after a heap cut ----------------------------------------

_ORD = "/home/dev/orders-service"


def _gc_log(seed: int, count: int, planted: dict[float, str], start_gc: int = 8800) -> str:
    rng = random.Random(seed)
    head = [
        "[2026-12-07T06:00:01.004+0000][info][gc,init] Version: 21.0.5+11-LTS (release)",
        "[2026-12-07T06:00:01.004+0000][info][gc,init] CPUs: 4 total, 4 available",
        "[2026-12-07T06:00:01.004+0000][info][gc,init] Memory: 8192M",
        "[2026-12-07T06:00:01.004+0000][info][gc,init] Large Page Support: Disabled",
        "[2026-12-07T06:00:01.004+0000][info][gc,init] NUMA Support: Disabled",
        "[2026-12-07T06:00:01.004+0000][info][gc,init] Compressed Oops: Enabled (Zero based)",
        "[2026-12-07T06:00:01.004+0000][info][gc,init] Heap Region Size: 4M",
        "[2026-12-07T06:00:01.004+0000][info][gc,init] Heap Min Capacity: 5G",
        "[2026-12-07T06:00:01.004+0000][info][gc,init] Heap Initial Capacity: 5G",
        "[2026-12-07T06:00:01.004+0000][info][gc,init] Heap Max Capacity: 5G",
        "[2026-12-07T06:00:01.004+0000][info][gc,init] Pre-touch: Disabled",
        "[2026-12-07T06:00:01.004+0000][info][gc,init] Parallel Workers: 4",
        "[2026-12-07T06:00:01.004+0000][info][gc,init] Concurrent Workers: 1",
        "[2026-12-07T06:00:01.004+0000][info][gc,init] Concurrent Refinement Workers: 4",
        "[2026-12-07T06:00:01.004+0000][info][gc,init] Periodic GC: Disabled",
    ]
    lines = []
    for i in range(count):
        t = f"2026-12-07T{9 + i * 5 // count:02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}+0000"
        before = rng.randint(2600, 4900)
        after = rng.randint(1200, before - 400)
        cause = rng.choice(
            [
                "(Normal) (G1 Evacuation Pause)",
                "(Concurrent Start) (G1 Humongous Allocation)",
                "(Normal) (G1 Preventive Collection)",
                "(Prepare Mixed) (G1 Evacuation Pause)",
                "(Mixed) (G1 Evacuation Pause)",
            ]
        )
        ms = rng.uniform(60, 390) if "Humongous" in cause else rng.uniform(8, 140)
        lines.append(
            f"[{t}][info][gc] GC({start_gc + i}) Pause Young {cause} {before}M->{after}M(5120M) {ms:.3f}ms"
        )
        if rng.random() < 0.25:
            lines.append(
                f"[{t}][info][gc] GC({start_gc + i}) Concurrent Mark Cycle {rng.uniform(200, 900):.3f}ms"
            )
    return "\n".join(head) + "\n" + bury(lines, planted)


def _jfr_alloc(seed: int) -> str:
    rng = random.Random(seed)
    frames = [
        "com.acme.orders.api.OrderController.list(OrderController.java:{n})",
        "com.fasterxml.jackson.databind.ObjectMapper.writeValueAsBytes(ObjectMapper.java:{n})",
        "org.springframework.web.servlet.FrameworkServlet.service(FrameworkServlet.java:{n})",
        "com.acme.orders.pricing.TaxCalculator.apply(TaxCalculator.java:{n})",
        "io.netty.buffer.PooledByteBufAllocator.newDirectBuffer(PooledByteBufAllocator.java:{n})",
        "java.util.Arrays.copyOf(Arrays.java:{n})",
        "java.lang.StringLatin1.newString(StringLatin1.java:{n})",
    ]
    out = []
    for i in range(26):
        size = rng.choice([16400, 32784, 65552, 131088, 262160, 524304, 1048592])
        cls = rng.choice(["byte[]", "char[]", "java.lang.Object[]", "long[]"])
        out.append("jdk.ObjectAllocationOutsideTLAB {")
        out.append(
            f"  startTime = 09:{rng.randint(10, 59)}:{rng.randint(10, 59)}.{rng.randint(100, 999)} (2026-12-07)"
        )
        out.append(f"  objectClass = {cls} (classLoader = bootstrap)")
        out.append(f"  allocationSize = {size} bytes")
        out.append(
            f'  eventThread = "http-nio-8080-exec-{rng.randint(1, 200)}" (javaThreadId = {rng.randint(40, 400)})'
        )
        out.append("  stackTrace = [")
        for _ in range(4):
            out.append(f"    {rng.choice(frames).format(n=rng.randint(30, 900))}")
        out.append("    ...")
        out.append("  ]")
        out.append("}")
        if i == 13:
            out += [
                "jdk.ObjectAllocationOutsideTLAB {",
                "  startTime = 09:41:07.322 (2026-12-07)",
                "  objectClass = byte[] (classLoader = bootstrap)",
                "  allocationSize = 3145752 bytes",
                '  eventThread = "export-pool-3" (javaThreadId = 212)',
                "  stackTrace = [",
                "    java.io.ByteArrayOutputStream.<init>(ByteArrayOutputStream.java:81)",
                "    com.acme.orders.export.CsvExporter.render(CsvExporter.java:58)",
                "    com.acme.orders.export.ExportJob.run(ExportJob.java:112)",
                "    java.util.concurrent.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:1144)",
                "    ...",
                "  ]",
                "}",
            ]
    return "\n".join(out)


def _jstat(seed: int, count: int) -> str:
    rng = random.Random(seed)
    lines = [
        "  S0     S1     E      O      M     CCS    YGC     YGCT     FGC    FGCT     CGC    CGCT       GCT"
    ]
    ygc = 8790
    for _ in range(count):
        ygc += rng.randint(0, 3)
        lines.append(
            f"  0.00 100.00  {rng.uniform(5, 95):5.2f}  {rng.uniform(40, 92):5.2f}  97.31  94.02  {ygc:5d}  {ygc * 0.061:7.3f}     0    0.000   {ygc // 9:4d}  {ygc * 0.0042:6.3f}  {ygc * 0.065:8.3f}"
        )
    return "\n".join(lines)


_DEPLOY = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: orders-service
  namespace: orders
spec:
  replicas: 6
  selector:
    matchLabels:
      app: orders-service
  template:
    metadata:
      labels:
        app: orders-service
    spec:
      nodeSelector:
        pool: shared-r6i-xlarge
      containers:
        - name: app
          image: registry.acme.internal/orders/orders-service:2026.12.1
          env:
            - name: JAVA_OPTS
              value: "-Xms6g -Xmx6g"
            - name: JDK_JAVA_OPTIONS
              value: "@/app/config/jvm.options"
          resources:
            requests:
              cpu: "2"
              memory: 8Gi
            limits:
              memory: 8Gi
          volumeMounts:
            - name: jvm-options
              mountPath: /app/config
      volumes:
        - name: jvm-options
          configMap:
            name: orders-jvm-options
"""

_JVM_OPTIONS = """# read last: overrides JAVA_OPTS from the deployment
-Xms5g
-Xmx5g
-XX:+UseG1GC
-XX:MaxGCPauseMillis=150
-XX:+ParallelRefProcEnabled
-XX:+AlwaysPreTouch
-Xlog:gc*,gc+humongous=debug:file=/var/log/orders/gc.log:time,level,tags:filecount=5,filesize=50m
-XX:StartFlightRecording=disk=true,maxage=6h,settings=profile,filename=/var/log/orders/orders.jfr
-XX:+HeapDumpOnOutOfMemoryError
-XX:HeapDumpPath=/var/log/orders
"""

_EXPORTER = """package com.acme.orders.export;

import java.io.ByteArrayOutputStream;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** Renders a merchant's orders as CSV for the nightly and on-demand exports. */
public final class CsvExporter {
    private static final int INITIAL_BUFFER = 3 * 1024 * 1024;
    private final OrderRepository orders;

    public CsvExporter(OrderRepository orders) {
        this.orders = orders;
    }

    public byte[] render(long merchantId, ExportWindow window) {
        List<OrderRow> rows = orders.forMerchant(merchantId, window.from(), window.to());
        ByteArrayOutputStream buffer = new ByteArrayOutputStream(INITIAL_BUFFER);
        try (OutputStreamWriter out = new OutputStreamWriter(buffer, StandardCharsets.UTF_8)) {
            out.write(OrderRow.CSV_HEADER);
            for (OrderRow row : rows) {
                out.write(row.toCsvLine());
            }
        } catch (java.io.IOException e) {
            throw new ExportFailed(merchantId, e);
        }
        return buffer.toByteArray();
    }
}
"""


def _gc_summary(seed: int, max_pause: str) -> str:
    rng = random.Random(seed)
    lines = [
        "hour   pauses  humongous  p50_ms  p99_ms  max_ms   gc_time_s  throughput",
        "-----  ------  ---------  ------  ------  -------  ---------  ----------",
    ]
    for h in range(6, 24):
        lines.append(
            f"{h:02d}:00  {rng.randint(300, 700):>6}  {rng.randint(0, 3):>9}  {rng.uniform(6, 14):>6.1f}  {rng.uniform(30, 80):>6.1f}  {rng.uniform(45, 90):>7.1f}  {rng.uniform(8, 30):>9.2f}  {rng.uniform(99.1, 99.8):>9.2f}%"
        )
    lines.append(
        f"total  {rng.randint(9000, 12000):>6}  {rng.randint(10, 40):>9}  {9.8:>6.1f}  {71.3:>6.1f}  {max_pause:>7}  {331.4:>9.2f}  {99.45:>9.2f}%"
    )
    return "\n".join(lines)


_K3_FACTS = [
    Fact("person", ("Rosa Delgado", "performance guild"), "the JVM expert consulted"),
    Fact("person", ("Anil Kapoor", "product owner"), "product owner of the orders service"),
    Fact("number", ("140 timeouts",), "timeouts an hour at the payments gateway, said once"),
    Fact("tool_output", ("412.771ms",), "longest pause in the GC log, restated as 'over 400 ms'"),
    Fact("tool_output", ("3145752",), "export buffer allocation size in the JFR dump"),
    Fact("conclusion", ("half a region",), "why the export buffers are humongous"),
    Fact("conclusion", ("red herring",), "the JDK 21 upgrade was not the cause"),
    Fact(
        "constraint", ("8Gi", "shared"), "the container memory limit can't grow on the shared pool"
    ),
    Fact("constraint", ("200 ms", "payments gateway"), "pause ceiling and why"),
    Fact("number", ("-Xmx5g",), "the heap actually in force, the corrected value"),
    Fact("decision", ("G1HeapRegionSize=16m",), "bigger regions instead of reverting the heap"),
    Fact("decision", ("StreamingCsvWriter",), "stream the export instead of buffering it"),
    Fact("number", ("07:30",), "rollout time, the later value"),
    Fact("path", ("deploy/orders-service/jvm.options",), "JVM options file changed"),
    Fact("tool_output", ("97.4",), "max pause after the fix in the GC summary table"),
]

K3 = Session(
    "k3-jvm-gc-pauses",
    [
        U(
            f"Since the 2026.12.1 release of orders-service the payments gateway is timing out on us, roughly 140 timeouts an hour at peak. That release moved us to JDK 21, so everyone is blaming the JDK. Repo and deploy manifests are in {_ORD}. Anil Kapoor, the product owner for orders, wants to know by end of day whether we roll back."
        ),
        A(
            "I'll look at the GC log from one of the pods first, then the deployment and JVM options.",
            Call(
                "Bash",
                {
                    "command": "kubectl -n orders exec deploy/orders-service -- tail -n 260 /var/log/orders/gc.log",
                    "description": "Tail the G1 log of an orders pod",
                },
                _gc_log(
                    1301,
                    230,
                    {
                        0.52: "[2026-12-07T11:38:44.916+0000][info][gc] GC(8929) Pause Young (Concurrent Start) (G1 Humongous Allocation) 4987M->3011M(5120M) 412.771ms"
                    },
                ),
            ),
            Call(
                "Read",
                {"file_path": f"{_ORD}/deploy/orders-service/deployment.yaml"},
                numbered(_DEPLOY),
            ),
            Call(
                "Read",
                {"file_path": f"{_ORD}/deploy/orders-service/jvm.options"},
                numbered(_JVM_OPTIONS),
            ),
        ),
        A(
            "The long pauses are all young collections triggered by humongous allocations, the worst one over 400 ms. The deployment sets -Xmx6g, so the heap is 6 GB. Let me see who is allocating those large objects.",
            Call(
                "Bash",
                {
                    "command": "kubectl -n orders exec deploy/orders-service -- jfr print --events jdk.ObjectAllocationOutsideTLAB /var/log/orders/orders.jfr | head -n 300",
                    "description": "Large allocations from the flight recording",
                },
                _jfr_alloc(1302),
            ),
            Call(
                "Bash",
                {
                    "command": "kubectl -n orders exec deploy/orders-service -- jstat -gcutil 1 5s 110",
                    "description": "GC utilisation every 5 s",
                },
                _jstat(1303, 110),
            ),
        ),
        A(
            "Correction to what I said about the heap: JDK_JAVA_OPTIONS reads jvm.options after JAVA_OPTS, and that file sets -Xmx5g, which is what the GC log's 5120M capacity shows. So the heap in force is 5 GB, down from 8 GB before the release."
        ),
        A(
            "That explains it. At 5 GB G1 picks 4 MB regions, and CsvExporter allocates a 3 MB ByteArrayOutputStream per export. Anything larger than half a region is a humongous object, so every export now allocates straight into old-generation regions and forces a concurrent-start young pause. With the old 8 GB heap the regions were larger and the same buffer was an ordinary young allocation. The JDK 21 upgrade in the same release is a red herring; the heap cut is what changed the behaviour.",
            Call(
                "Read",
                {"file_path": f"{_ORD}/src/main/java/com/acme/orders/export/CsvExporter.java"},
                numbered(_EXPORTER),
            ),
        ),
        U(
            "Rosa Delgado from the performance guild agrees with the humongous theory. Can't we just put the heap back to 8 GB?"
        ),
        A(
            "Not inside this container: the limit is 8Gi and metaspace, threads and direct buffers need well over a gigabyte on top of the heap, so an 8 GB heap would be OOM-killed. Is the limit something we can raise?"
        ),
        U(
            "No. The pods run on the shared r6i.xlarge pool and the 8Gi limit is what the capacity plan allows per pod, so that's fixed. Also whatever we do, p99 GC pause has to stay under 200 ms, because the payments gateway gives us 250 ms per call."
        ),
        A(
            "Then two changes. First, raise the region size explicitly with -XX:G1HeapRegionSize=16m, instead of reverting the heap: a 3 MB buffer is then well under half a region and stops being humongous, and it costs nothing in memory. Second, fix the cause in code.",
            Call(
                "apply_patch",
                codex_patch(
                    "deploy/orders-service/jvm.options",
                    "-XX:MaxGCPauseMillis=150",
                    "-XX:MaxGCPauseMillis=150\n-XX:G1HeapRegionSize=16m",
                    "-XX:+UseG1GC",
                ),
                codex_patched("deploy/orders-service/jvm.options"),
            ),
            Call(
                "Edit",
                {
                    "file_path": f"{_ORD}/deploy/orders-service/deployment.yaml",
                    "old_string": '              value: "-Xms6g -Xmx6g"',
                    "new_string": '              value: ""  # heap is set in jvm.options only',
                },
                edited(
                    f"{_ORD}/deploy/orders-service/deployment.yaml",
                    '            - name: JAVA_OPTS\n              value: ""  # heap is set in jvm.options only',
                    22,
                ),
            ),
        ),
        U("What's the code fix?"),
        A(
            "The exporter shouldn't hold a whole export in memory at all. I'm replacing the buffer with a StreamingCsvWriter that writes rows straight to the HTTP response or the S3 multipart upload, so no multi-megabyte array exists anywhere.",
            Call(
                "Write",
                {
                    "file_path": f"{_ORD}/src/main/java/com/acme/orders/export/StreamingCsvWriter.java",
                    "content": "package com.acme.orders.export;\n\nimport java.io.BufferedWriter;\nimport java.io.IOException;\nimport java.io.OutputStream;\nimport java.io.OutputStreamWriter;\nimport java.nio.charset.StandardCharsets;\n\n/** Writes orders as CSV to a stream in 64 KB chunks; nothing is buffered whole. */\npublic final class StreamingCsvWriter implements AutoCloseable {\n    private final BufferedWriter out;\n\n    public StreamingCsvWriter(OutputStream target) {\n        this.out = new BufferedWriter(new OutputStreamWriter(target, StandardCharsets.UTF_8), 64 * 1024);\n    }\n\n    public void header() throws IOException {\n        out.write(OrderRow.CSV_HEADER);\n    }\n\n    public void row(OrderRow row) throws IOException {\n        out.write(row.toCsvLine());\n    }\n\n    @Override\n    public void close() throws IOException {\n        out.close();\n    }\n}\n",
                },
                written(f"{_ORD}/src/main/java/com/acme/orders/export/StreamingCsvWriter.java"),
            ),
            Call(
                "Edit",
                {
                    "file_path": f"{_ORD}/src/main/java/com/acme/orders/export/CsvExporter.java",
                    "old_string": "    public byte[] render(long merchantId, ExportWindow window) {",
                    "new_string": "    public void render(long merchantId, ExportWindow window, OutputStream target) {",
                },
                edited(
                    f"{_ORD}/src/main/java/com/acme/orders/export/CsvExporter.java",
                    "    public void render(long merchantId, ExportWindow window, OutputStream target) {\n        try (StreamingCsvWriter out = new StreamingCsvWriter(target)) {",
                    17,
                ),
            ),
        ),
        A(
            "Running the tests.",
            Call(
                "Bash",
                {
                    "command": "./gradlew test --console=plain",
                    "description": "Unit and slice tests",
                },
                _tests(
                    1304,
                    230,
                    [
                        "com.acme.orders.export.CsvExporterTest",
                        "com.acme.orders.api.OrderControllerTest",
                        "com.acme.orders.pricing.TaxCalculatorTest",
                    ],
                    [
                        "renders",
                        "streams",
                        "header",
                        "merchant",
                        "window",
                        "escapes",
                        "quotes",
                        "totals",
                        "refund",
                        "tax",
                    ],
                    "gradle",
                    "BUILD SUCCESSFUL in 1m 38s\n7 actionable tasks: 3 executed, 4 up-to-date",
                ),
            ),
        ),
        A(
            "Tests pass. I deployed the build with the new options to the orders-canary pod for three hours of real traffic and summarised its GC log per hour.",
            Call(
                "Bash",
                {
                    "command": "kubectl -n orders exec orders-canary-0 -- gc-stats --by hour /var/log/orders/gc.log",
                    "description": "Per-hour pause summary on the canary",
                },
                _gc_summary(1305, "97.4"),
            ),
        ),
        A(
            "On the canary the worst pause all day stayed under 100 ms and humongous allocations almost vanished; p99 is far inside the 200 ms ceiling. I'd schedule the rollout for Wednesday at 10:00."
        ),
        U(
            "Wednesday at 10 is inside the payments freeze window. Anil says go Thursday before the morning peak."
        ),
        A(
            "Thursday at 07:30 then, before the peak starts at 08:00. Summary for Anil: no rollback needed; the JDK is fine. The heap was cut to 5 GB, which shrank G1 regions to 4 MB and made the 3 MB export buffers humongous. The fix is G1HeapRegionSize=16m in deploy/orders-service/jvm.options plus the StreamingCsvWriter change, inside the 8Gi limit."
        ),
    ],
    _K3_FACTS,
)


# -- k4: a Redis Sentinel failover that loses writes -------------------------------------------

_RDS = "/srv/src/sessions-api"
_MASTERS = {
    "sessions": "10.4.2.17",
    "ratelimit": "10.4.3.41",
    "queues": "10.4.5.9",
    "features": "10.4.6.52",
}


def _sentinel_log(seed: int, count: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        pid = rng.choice([1, 7, 9])
        t = f"07 Dec 2026 0{rng.randint(0, 3)}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}"
        name = rng.choice(list(_MASTERS))
        ip = f"10.4.{rng.randint(2, 7)}.{rng.randint(2, 99)}"
        event = rng.choice(
            [
                f"+sdown sentinel {short_hash(rng, 40)} {ip} 26379 @ {name} {_MASTERS[name]} 6379",
                f"-sdown sentinel {short_hash(rng, 40)} {ip} 26379 @ {name} {_MASTERS[name]} 6379",
                f"+slave slave {ip}:6379 {ip} 6379 @ {name} {_MASTERS[name]} 6379",
                f"+reboot slave {ip}:6379 {ip} 6379 @ {name} {_MASTERS[name]} 6379",
                f"-dup-sentinel master {name} {_MASTERS[name]} 6379 #duplicate of {ip}:26379",
                f"+sentinel sentinel {short_hash(rng, 40)} {ip} 26379 @ {name} {_MASTERS[name]} 6379",
            ]
        )
        lines.append(f"{pid}:X {t} {rng.choice(['*', '#'])} {event}")
    return bury(lines, planted)


_FAILOVER = {
    0.61: "\n".join(
        [
            "9:X 07 Dec 2026 03:47:12.204 # +sdown master sessions 10.4.2.17 6379",
            "9:X 07 Dec 2026 03:47:12.291 # +odown master sessions 10.4.2.17 6379 #quorum 2/2",
            "9:X 07 Dec 2026 03:47:12.291 # +new-epoch 41",
            "9:X 07 Dec 2026 03:47:12.291 # +try-failover master sessions 10.4.2.17 6379",
            "9:X 07 Dec 2026 03:47:12.322 # +vote-for-leader 5c1e0f7d2b9a8e6f4d3c2b1a0f9e8d7c6b5a4f3e 41",
            "9:X 07 Dec 2026 03:47:12.400 # +elected-leader master sessions 10.4.2.17 6379",
            "9:X 07 Dec 2026 03:47:12.400 # +failover-state-select-slave master sessions 10.4.2.17 6379",
            "9:X 07 Dec 2026 03:47:12.467 # +selected-slave slave 10.4.2.23:6379 10.4.2.23 6379 @ sessions 10.4.2.17 6379",
            "9:X 07 Dec 2026 03:47:12.467 * +failover-state-send-slaveof-noone slave 10.4.2.23:6379 10.4.2.23 6379 @ sessions 10.4.2.17 6379",
            "9:X 07 Dec 2026 03:47:13.391 # +promoted-slave slave 10.4.2.23:6379 10.4.2.23 6379 @ sessions 10.4.2.17 6379",
            "9:X 07 Dec 2026 03:47:13.702 # +failover-end master sessions 10.4.2.17 6379",
            "9:X 07 Dec 2026 03:47:13.702 # +switch-master sessions 10.4.2.17 6379 10.4.2.23 6379",
            "9:X 07 Dec 2026 03:47:23.884 # -sdown slave 10.4.2.17:6379 10.4.2.17 6379 @ sessions 10.4.2.23 6379",
            "9:X 07 Dec 2026 03:47:33.901 * +convert-to-slave slave 10.4.2.17:6379 10.4.2.17 6379 @ sessions 10.4.2.23 6379",
        ]
    )
}


def _info(seed: int, role: str, offset: int, planted_slave: str) -> str:
    rng = random.Random(seed)
    lines = [
        "# Server",
        "redis_version:7.2.5",
        "redis_mode:standalone",
        "os:Linux 6.1.0-27-cloud-amd64 x86_64",
        f"process_id:{rng.randint(100, 9000)}",
        f"run_id:{short_hash(rng, 40)}",
        "tcp_port:6379",
        f"uptime_in_seconds:{rng.randint(100000, 9000000)}",
        "hz:10",
        "# Clients",
        f"connected_clients:{rng.randint(300, 900)}",
        "maxclients:10000",
        f"blocked_clients:{rng.randint(0, 4)}",
        "# Memory",
        f"used_memory:{rng.randint(10**9, 4 * 10**9)}",
        f"used_memory_rss:{rng.randint(10**9, 4 * 10**9)}",
        "maxmemory:6442450944",
        "maxmemory_policy:volatile-lru",
        f"mem_fragmentation_ratio:{rng.uniform(1.0, 1.6):.2f}",
        "# Persistence",
        "aof_enabled:1",
        "aof_rewrite_in_progress:0",
        "rdb_last_bgsave_status:ok",
        "aof_last_bgrewrite_status:ok",
        "# Stats",
    ]
    for key in [
        "total_connections_received",
        "total_commands_processed",
        "instantaneous_ops_per_sec",
        "total_net_input_bytes",
        "total_net_output_bytes",
        "rejected_connections",
        "sync_full",
        "sync_partial_ok",
        "sync_partial_err",
        "expired_keys",
        "evicted_keys",
        "keyspace_hits",
        "keyspace_misses",
        "pubsub_channels",
        "latest_fork_usec",
        "total_forks",
        "io_threaded_reads_processed",
        "io_threaded_writes_processed",
    ]:
        lines.append(f"{key}:{rng.randint(0, 10**9)}")
    lines += ["# Replication", f"role:{role}"]
    if role == "master":
        lines += [
            "connected_slaves:2",
            planted_slave,
            f"slave1:ip=10.4.2.58,port=6379,state=online,offset={offset - rng.randint(0, 900)},lag=0",
        ]
    else:
        lines += [
            "master_host:10.4.2.23",
            "master_port:6379",
            "master_link_status:up",
            f"slave_repl_offset:{offset}",
            "slave_read_only:1",
            "connected_slaves:0",
        ]
    lines += [
        "master_failover_state:no-failover",
        f"master_replid:{short_hash(rng, 40)}",
        f"master_replid2:{short_hash(rng, 40)}",
        f"master_repl_offset:{offset}",
        f"second_repl_offset:{offset - rng.randint(10**5, 10**6)}",
        "repl_backlog_active:1",
        "repl_backlog_size:67108864",
        "# CPU",
        f"used_cpu_sys:{rng.uniform(1000, 90000):.6f}",
        f"used_cpu_user:{rng.uniform(1000, 90000):.6f}",
        "# Keyspace",
        f"db0:keys={rng.randint(10**5, 10**6)},expires={rng.randint(10**5, 10**6)},avg_ttl={rng.randint(10**5, 10**7)}",
    ]
    return "\n".join(lines)


def _app_log(seed: int, count: int) -> str:
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        t = f"2026-12-07T03:{rng.randint(40, 55):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z"
        pod = f"sessions-api-{short_hash(rng, 9)}-{short_hash(rng, 5)}"
        event = rng.choice(
            [
                {
                    "level": "info",
                    "msg": "session write",
                    "op": "HSET",
                    "latency_ms": rng.randint(1, 9),
                },
                {
                    "level": "info",
                    "msg": "session read",
                    "op": "HGETALL",
                    "latency_ms": rng.randint(1, 9),
                },
                {
                    "level": "warning",
                    "msg": "redis connection reset, reconnecting",
                    "attempt": rng.randint(1, 3),
                },
                {
                    "level": "error",
                    "msg": "READONLY You can't write against a read only replica.",
                    "op": "HSET",
                },
                {
                    "level": "info",
                    "msg": "session lookup miss, forcing login",
                    "user": f"u_{rng.randint(10**6, 10**7)}",
                },
            ]
        )
        lines.append(json.dumps({"ts": t, "pod": pod, **event}))
    return "\n".join(lines)


def _writes_table(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "pod                                  target        window                   writes  acked  later_found",
        "-----------------------------------  ------------  -----------------------  ------  -----  -----------",
    ]
    for _ in range(58):
        pod = f"sessions-api-{short_hash(rng, 9)}-{short_hash(rng, 5)}"
        target = "10.4.2.17"
        w = rng.randint(40, 180)
        found = 0
        lines.append(f"{pod:<36} {target:<13} 03:47:12-03:47:23        {w:>6}  {w:>5}  {found:>11}")
    lines.append(
        "-----------------------------------  ------------  -----------------------  ------  -----  -----------"
    )
    lines.append(
        "total to 10.4.2.17 (old master)                                           6914   6914            0"
    )
    return "\n".join(lines)


def _sentinel_conf(seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "# managed by infra/redis; sentinels run on the three redis hosts",
        "port 26379",
        "daemonize no",
        'logfile ""',
        "dir /data",
        "sentinel resolve-hostnames no",
        "sentinel announce-hostnames no",
    ]
    for name, ip in _MASTERS.items():
        lines += [
            "",
            f"sentinel monitor {name} {ip} 6379 2",
            f"sentinel down-after-milliseconds {name} {20000 if name == 'sessions' else rng.choice([10000, 15000])}",
            f"sentinel failover-timeout {name} {rng.choice([60000, 120000, 180000])}",
            f"sentinel parallel-syncs {name} 1",
            f"sentinel auth-user {name} sentinel-{name}",
            f"sentinel auth-pass {name} ${{SENTINEL_{name.upper()}_PASSWORD}}",
        ]
    return "\n".join(lines)


def _redis_conf(seed: int) -> str:
    rng = random.Random(seed)
    keys = [
        "tcp-backlog 511",
        "timeout 0",
        "tcp-keepalive 300",
        "databases 4",
        'save ""',
        "appendonly yes",
        "appendfsync everysec",
        "no-appendfsync-on-rewrite no",
        "auto-aof-rewrite-percentage 100",
        "auto-aof-rewrite-min-size 64mb",
        "maxmemory 6gb",
        "maxmemory-policy volatile-lru",
        "lazyfree-lazy-eviction yes",
        "lazyfree-lazy-expire yes",
        "replica-read-only yes",
        "repl-diskless-sync yes",
        "repl-diskless-sync-delay 5",
        "repl-backlog-size 64mb",
        "slowlog-log-slower-than 10000",
        "slowlog-max-len 256",
        "latency-monitor-threshold 50",
        "hz 10",
        "dynamic-hz yes",
        "io-threads 4",
        "io-threads-do-reads yes",
    ]
    lines = [
        "# redis.conf for the sessions shard (rendered by ansible role redis_server)",
        "bind 0.0.0.0",
        "protected-mode yes",
        "port 6379",
    ]
    for k in keys:
        lines.append(k)
        lines.append(
            f"# {rng.choice(['keep in sync with the other shards', 'see runbook', 'tuned 2025-03', 'default'])}"
        )
    return "\n".join(lines)


_K4_FACTS = [
    Fact("person", ("Yusuf Demir", "Redis fleet"), "DBA who runs the Redis fleet"),
    Fact("person", ("Chloe Martin", "incident commander"), "incident commander"),
    Fact("number", ("2,100 users",), "users logged out, said once"),
    Fact("number", ("4pm",), "when the postmortem review is, said once"),
    Fact("tool_output", ("10.4.2.23",), "the replica Sentinel promoted, only in its log and INFO"),
    Fact("tool_output", ("offset=884119052",), "replica offset on the old master's INFO"),
    Fact(
        "tool_output",
        ("6914",),
        "writes that went to the old master, restated as 'roughly seven thousand'",
    ),
    Fact("conclusion", ("resync", "discarded"), "what happened to the writes"),
    Fact("decision", ("min-replicas-to-write 1",), "an isolated master refuses writes"),
    Fact("constraint", ("below 5000", "cross-AZ"), "down-after floor and why"),
    Fact("constraint", ("Redis Cluster", "Lua"), "no move to Cluster this quarter"),
    Fact("number", ("20000",), "prod down-after-milliseconds, the corrected value"),
    Fact("decision", ("1500 ms",), "retry backoff cap, the later policy"),
    Fact("path", ("sessions_api/redis_client.py",), "client module written"),
]

K4 = Session(
    "k4-redis-failover-writes",
    [
        U(
            f"Postmortem prep. Last night the sessions Redis failed over at 03:47 and about 2,100 users got logged out even though Sentinel did its job. Chloe Martin is incident commander and wants a root cause and a fix in the doc before the review at 4pm today. The service is in {_RDS}, infra config under infra/redis."
        ),
        A(
            "Pulling the Sentinel logs from all three sentinels and the replication state of both nodes.",
            Call(
                "shell",
                codex_shell(
                    "for h in redis-a redis-b redis-c; do ssh $h 'docker logs --since 6h sentinel 2>&1'; done | sort -k3,5 | tail -n 230",
                    _RDS,
                ),
                codex_text(_sentinel_log(1401, 210, _FAILOVER), seconds=3.8),
            ),
            Call(
                "shell",
                codex_shell(
                    "redis-cli -h 10.4.2.23 INFO all | grep -v '^$' && echo ---- && redis-cli -h 10.4.2.17 INFO all | grep -v '^$'",
                    _RDS,
                ),
                codex_json(
                    _info(
                        1402,
                        "master",
                        884131906,
                        "slave0:ip=10.4.2.17,port=6379,state=online,offset=884119052,lag=1",
                    )
                    + "\n----\n"
                    + _info(1403, "slave", 884131906, ""),
                    seconds=0.4,
                ),
            ),
        ),
        A(
            "Sentinel saw the master go subjectively down, got quorum and promoted a replica within about a second and a half; the old master came back ten seconds later and was converted to a replica. The failover itself looks clean, so the lost sessions must be writes that landed somewhere they didn't survive. Checking the application side.",
            Call(
                "shell",
                codex_shell(
                    'kubectl -n identity logs -l app=sessions-api --since=8h --timestamps=false | grep -E \'"ts": "2026-12-07T03:(4|5)\' | head -n 200',
                    _RDS,
                ),
                codex_json(_app_log(1404, 200), seconds=6.2),
            ),
            Call(
                "shell",
                codex_shell(
                    "python3 tools/trace_writes.py --from 03:47:00 --to 03:48:00 --aof /backups/redis-a/appendonly.aof.1 --aof /backups/redis-b/appendonly.aof.1",
                    _RDS,
                ),
                codex_text(_writes_table(1405), seconds=41.0),
            ),
        ),
        A(
            "That's the loss. For the eleven seconds between the partition starting and the old master coming back, the pods still held connections to 10.4.2.17 and kept writing to it: roughly seven thousand session writes, every one acknowledged. The old master was on the minority side of the partition, so it never knew it had been demoted. When it rejoined, Sentinel made it a replica, it did a full resync from the new master and discarded everything it had accepted in the meantime. Those were the logins that vanished."
        ),
        U("What's down-after-milliseconds set to?"),
        A(
            "It's 30000 for the sessions master, so Sentinel waits 30 seconds before declaring it down.",
            Call(
                "shell",
                codex_shell("cat infra/redis/sentinel.conf infra/redis/redis.conf", _RDS),
                codex_json(_sentinel_conf(1406) + "\n\n" + _redis_conf(1407), seconds=0.1),
            ),
        ),
        A(
            "I had that wrong: 30000 is the staging value. In infra/redis/sentinel.conf the prod sessions master has down-after-milliseconds 20000, and the other three masters use 10000 or 15000. The log agrees; the failover fired well inside 30 seconds."
        ),
        U(
            "Yusuf Demir, our DBA who runs the Redis fleet, says don't go below 5000 for down-after: the cross-AZ link between the redis hosts has 2-3 second blips several times a day and we'd fail over on every one. Also, before you suggest it, moving sessions to Redis Cluster isn't happening this quarter; the Lua scripts in sessions_api do multi-key operations across user and device keys."
        ),
        A(
            "Noted, both. Then the fix is on the master's side rather than in detection speed: set min-replicas-to-write 1 with min-replicas-max-lag 10 on the sessions shard. A master that can't see any replica for ten seconds then refuses writes. So the isolated old master would have answered errors instead of accepting writes that were bound to be thrown away, and the clients would have retried against the new master.",
            Call(
                "apply_patch",
                codex_patch(
                    "infra/redis/redis.conf",
                    "replica-read-only yes",
                    "replica-read-only yes\n# refuse writes when cut off from every replica: they would be discarded on resync\nmin-replicas-to-write 1\nmin-replicas-max-lag 10",
                ),
                codex_patched("infra/redis/redis.conf"),
            ),
        ),
        A(
            "On the client side, a rejected write should be retried against whatever Sentinel reports as master. I'll write the client wrapper with 3 retries 200 ms apart.",
            Call(
                "shell",
                codex_shell("sed -n 1,80p sessions_api/store.py", _RDS),
                codex_text(
                    numbered(
                        "import json\nimport time\n\nimport redis\nfrom redis.sentinel import Sentinel\n\nfrom sessions_api.settings import settings\n\n_sentinel = Sentinel(settings.sentinels, socket_timeout=0.5)\n\n\ndef _master() -> redis.Redis:\n    return _sentinel.master_for('sessions', socket_timeout=0.5)\n\n\ndef save(session_id: str, data: dict) -> None:\n    _master().hset(f'sess:{session_id}', mapping={k: json.dumps(v) for k, v in data.items()})\n\n\ndef load(session_id: str) -> dict:\n    raw = _master().hgetall(f'sess:{session_id}')\n    return {k.decode(): json.loads(v) for k, v in raw.items()}\n"
                    ),
                    seconds=0.1,
                ),
            ),
        ),
        U(
            "Chloe points out the failover takes a second and a half end to end. Three retries 200 ms apart gives up after 600 ms, before the new master even exists."
        ),
        A(
            "Right; that policy is replaced. The client now retries 5 times with jittered exponential backoff capped at 1500 ms per wait, which covers a full failover with room to spare, and it re-resolves the master from Sentinel before every retry.",
            Call(
                "shell",
                codex_shell(
                    "cat > sessions_api/redis_client.py <<'EOF'\n\"\"\"Writes that survive a Sentinel failover: re-resolve the master and retry with backoff.\"\"\"\nimport random\nimport time\n\nimport redis\nfrom redis.sentinel import Sentinel\n\nfrom sessions_api.settings import settings\n\n_sentinel = Sentinel(settings.sentinels, socket_timeout=0.5)\nRETRIES = 5\nBACKOFF_CAP_MS = 1500  # a failover takes ~1.5 s end to end\n\n\ndef with_master(op):\n    for attempt in range(RETRIES + 1):\n        try:\n            return op(_sentinel.master_for('sessions', socket_timeout=0.5))\n        except (redis.ConnectionError, redis.ReadOnlyError, redis.ResponseError) as exc:\n            if attempt == RETRIES or 'NOREPLICAS' not in str(exc) and not isinstance(exc, (redis.ConnectionError, redis.ReadOnlyError)):\n                raise\n            time.sleep(random.uniform(0, min(BACKOFF_CAP_MS, 100 * 2**attempt)) / 1000)\nEOF",
                    _RDS,
                ),
                codex_json("", seconds=0.1),
            ),
            Call(
                "apply_patch",
                codex_patch(
                    "sessions_api/store.py",
                    "def save(session_id: str, data: dict) -> None:\n    _master().hset(f'sess:{session_id}', mapping={k: json.dumps(v) for k, v in data.items()})",
                    "def save(session_id: str, data: dict) -> None:\n    mapping = {k: json.dumps(v) for k, v in data.items()}\n    with_master(lambda r: r.hset(f'sess:{session_id}', mapping=mapping))",
                ),
                codex_patched("sessions_api/store.py"),
            ),
        ),
        A(
            "Running the tests, including the failover test that partitions the master in the docker-compose setup.",
            Call(
                "shell",
                codex_shell(".venv/bin/pytest -q tests -p no:cacheprovider -v", _RDS),
                codex_text(
                    _tests(
                        1408,
                        220,
                        ["tests/test_store.py", "tests/test_failover.py", "tests/test_login.py"],
                        [
                            "save",
                            "load",
                            "retry",
                            "failover",
                            "partition",
                            "session",
                            "expire",
                            "refuses",
                            "writes",
                            "master",
                        ],
                        "pytest",
                        "============================= 220 passed in 96.31s =============================",
                    ),
                    seconds=98.0,
                ),
            ),
        ),
        A(
            "All pass, and the partition test now shows zero lost writes: the isolated master answers NOREPLICAS, the client backs off and lands on the promoted replica. For the doc: writes were acknowledged by a master that had been cut off, then discarded on resync; the fix is min-replicas-to-write 1 on the shard plus the retrying client in sessions_api/redis_client.py. Detection stays at 20000 ms, above Yusuf's 5000 floor, and nothing moves to Redis Cluster."
        ),
    ],
    _K4_FACTS,
)


# -- k5: five-second DNS stalls in Alpine pods on Kubernetes -----------------------------------

_DNS = "/home/dev/platform-manifests"
_NS = [
    "payments",
    "checkout",
    "identity",
    "catalog",
    "notifications",
    "ledger",
    "search",
    "kube-system",
]


def _curl_loop(seed: int, count: int, planted: dict[float, str]) -> str:
    rng = random.Random(seed)
    lines = []
    for i in range(count):
        lookup = rng.uniform(0.0009, 0.0061)
        connect = lookup + rng.uniform(0.0008, 0.004)
        tls = connect + rng.uniform(0.02, 0.06)
        total = tls + rng.uniform(0.03, 0.2)
        lines.append(
            f"{i:03d} code=200 time_namelookup: {lookup:.6f} time_connect: {connect:.6f} time_appconnect: {tls:.6f} time_total: {total:.6f}"
        )
    return bury(lines, planted)


def _tcpdump(seed: int, count: int) -> str:
    rng = random.Random(seed)
    names = [
        "api.stripe.com",
        "api.adyen.com",
        "hooks.slack.com",
        "sqs.eu-west-1.amazonaws.com",
        "ledger.ledger.svc.cluster.local",
        "vault.security.svc.cluster.local",
    ]
    suffixes = [
        "payments.svc.cluster.local",
        "svc.cluster.local",
        "cluster.local",
        "eu-west-1.compute.internal",
        "",
    ]
    lines = []
    for _ in range(count):
        t = f"10:{rng.randint(31, 39):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999999):06d}"
        name = rng.choice(names)
        suffix = rng.choice(suffixes)
        q = f"{name}.{suffix}." if suffix else f"{name}."
        port = rng.randint(32768, 60999)
        qid = rng.randint(1000, 65000)
        qtype = rng.choice(["A?", "AAAA?"])
        src = f"10.{rng.randint(40, 47)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"
        if rng.random() < 0.5:
            lines.append(f"{t} IP {src}.{port} > 10.96.0.10.53: {qid}+ {qtype} {q} ({len(q) + 17})")
        else:
            answer = (
                "NXDomain*- 0/1/0"
                if suffix
                else f"1/0/0 {qtype[:-1]} 104.18.{rng.randint(0, 255)}.{rng.randint(0, 255)}"
            )
            lines.append(
                f"{t} IP 10.96.0.10.53 > {src}.{port}: {qid} {answer} ({rng.randint(90, 190)})"
            )
    return "\n".join(lines)


def _conntrack(seed: int) -> str:
    rng = random.Random(seed)
    lines = []
    for cpu in range(16):
        failed = 18734 if cpu == 11 else rng.randint(900, 9800)
        lines.append(
            f"cpu={cpu:<4}\tfound={rng.randint(0, 60)} invalid={rng.randint(100, 4000)} insert=0 insert_failed={failed} drop={failed} early_drop=0 error={rng.randint(0, 9)} search_restart={rng.randint(1000, 90000)}"
        )
    return "\n".join(lines)


def _coredns_log(seed: int, count: int) -> str:
    rng = random.Random(seed)
    names = [
        "api.stripe.com",
        "api.adyen.com",
        "hooks.slack.com",
        "ledger.ledger.svc.cluster.local",
        "vault.security.svc.cluster.local",
        "search-api.search.svc.cluster.local",
    ]
    lines = []
    for _ in range(count):
        src = f"10.{rng.randint(40, 47)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}:{rng.randint(32768, 60999)}"
        name = rng.choice(names)
        suffix = rng.choice(
            ["payments.svc.cluster.local.", "svc.cluster.local.", "cluster.local.", ""]
        )
        full = f"{name}.{suffix}" if suffix else f"{name}."
        rcode = "NXDOMAIN" if suffix and "svc.cluster.local" not in name else "NOERROR"
        lines.append(
            f'[INFO] {src} - {rng.randint(1000, 65000)} "{rng.choice(["A", "AAAA"])} IN {full} udp {rng.randint(60, 120)} false 512" {rcode} qr,aa,rd {rng.randint(100, 400)} {rng.uniform(0.00004, 0.0009):.9f}s'
        )
    return "\n".join(lines)


def _dnsperf(lost: str, latency: str, qps: str) -> str:
    return "\n".join(
        [
            "DNS Performance Testing Tool",
            "Version 2.14.0",
            "",
            "[Status] Command line: dnsperf -s 10.96.0.10 -d queries.txt -l 60 -c 20 -Q 2500",
            "[Status] Sending queries (to 10.96.0.10:53)",
            "[Status] Started at: Mon Dec  7 10:31:02 2026",
            "[Status] Stopping after 60.000000 seconds",
            "[Status] Testing complete (time limit)",
            "",
            "Statistics:",
            "",
            "  Queries sent:         149877",
            "  Queries completed:    " + qps,
            f"  Queries lost:         {lost}",
            "",
            "  Response codes:       NOERROR 61210 (41.40%), NXDOMAIN 86655 (58.60%)",
            "  Average packet size:  request 52, response 139",
            "  Run time (s):         60.000417",
            "  Queries per second:   2464.130",
            "",
            f"  Average Latency (s):  {latency} (min 0.000077, max 5.004113)",
            "  Latency StdDev (s):   0.193006",
        ]
    )


def _pods(seed: int, count: int) -> str:
    rng = random.Random(seed)
    lines = [
        "NAMESPACE       NAME                                         READY   STATUS    RESTARTS       AGE     IP             NODE"
    ]
    for _ in range(count):
        ns = rng.choice(_NS)
        name = f"{rng.choice(['payments-gateway', 'checkout-api', 'identity-api', 'catalog-sync', 'notify-worker', 'ledger-writer', 'search-api', 'coredns'])}-{short_hash(rng, 9)}-{short_hash(rng, 5)}"
        lines.append(
            f"{ns:<15} {name:<44} 1/1     Running   {rng.randint(0, 4)}              {rng.randint(1, 40)}d     10.{rng.randint(40, 47)}.{rng.randint(0, 255)}.{rng.randint(2, 254):<5} gke-prod-pool-{rng.randint(1, 3)}-{short_hash(rng, 8)}-{short_hash(rng, 4)}"
        )
    return "\n".join(lines)


_GW_DEPLOY = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: payments-gateway
  namespace: payments
  labels:
    app: payments-gateway
    team: payments
spec:
  replicas: 9
  selector:
    matchLabels:
      app: payments-gateway
  template:
    metadata:
      labels:
        app: payments-gateway
    spec:
      containers:
        - name: gateway
          image: europe-docker.pkg.dev/acme-prod/payments/payments-gateway:4.18.2
          ports:
            - containerPort: 8443
          env:
            - name: STRIPE_API_BASE
              value: https://api.stripe.com
            - name: ADYEN_API_BASE
              value: https://api.adyen.com
            - name: HTTP_CLIENT_TIMEOUT
              value: 8s
          resources:
            requests: {cpu: 500m, memory: 512Mi}
            limits: {memory: 512Mi}
"""

_DOCKERFILE = """FROM golang:1.23-alpine AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=1 go build -o /out/gateway ./cmd/gateway

# edge sites pull this image over thin links: keep the final image small
FROM alpine:3.20
RUN apk add --no-cache ca-certificates tzdata
COPY --from=build /out/gateway /usr/local/bin/gateway
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/gateway"]
"""


def _grep_dnsconfig(seed: int) -> str:
    rng = random.Random(seed)
    apps = [
        "checkout-api",
        "identity-api",
        "catalog-sync",
        "notify-worker",
        "ledger-writer",
        "search-api",
        "payments-gateway",
        "fraud-scorer",
        "tax-engine",
    ]
    lines = []
    for _ in range(48):
        app = rng.choice(apps)
        text = rng.choice(
            [
                "dnsPolicy: ClusterFirst",
                "dnsConfig:",
                "  options:",
                "    - name: ndots",
                '      value: "5"',
                "    - name: timeout",
                '      value: "5"',
            ]
        )
        lines.append(
            f"{_DNS}/apps/{app}/overlays/{rng.choice(['prod', 'staging', 'dev'])}/deployment-patch.yaml:{rng.randint(8, 60)}:      {text}"
        )
    return "\n".join(lines)


_NODELOCAL = """# NodeLocal DNSCache: a caching resolver on every node, listening on a link-local address.
# Pods keep 10.96.0.10 in resolv.conf; iptables NOTRACK rules send it to the local cache,
# so DNS from pods no longer goes through conntrack at all.
apiVersion: v1
kind: ServiceAccount
metadata:
  name: node-local-dns
  namespace: kube-system
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: node-local-dns
  namespace: kube-system
data:
  Corefile: |
    cluster.local:53 {
        errors
        cache {
            success 9984 30
            denial 9984 5
        }
        reload
        loop
        bind 169.254.20.10 10.96.0.10
        forward . __PILLAR__CLUSTER__DNS__ {
            force_tcp
        }
        prometheus :9253
        health 169.254.20.10:8080
    }
    .:53 {
        errors
        cache 30
        reload
        loop
        bind 169.254.20.10 10.96.0.10
        forward . __PILLAR__UPSTREAM__SERVERS__
        prometheus :9253
    }
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: node-local-dns
  namespace: kube-system
spec:
  updateStrategy:
    rollingUpdate:
      maxUnavailable: 10%
  selector:
    matchLabels:
      k8s-app: node-local-dns
  template:
    metadata:
      labels:
        k8s-app: node-local-dns
    spec:
      priorityClassName: system-node-critical
      serviceAccountName: node-local-dns
      hostNetwork: true
      dnsPolicy: Default
      tolerations:
        - operator: Exists
      containers:
        - name: node-cache
          image: registry.k8s.io/dns/k8s-dns-node-cache:1.23.1
          args: ["-localip", "169.254.20.10,10.96.0.10", "-conf", "/etc/Corefile", "-upstreamsvc", "kube-dns-upstream"]
          securityContext:
            capabilities:
              add: ["NET_ADMIN"]
          resources:
            requests: {cpu: 25m, memory: 5Mi}
"""

_K5_FACTS = [
    Fact("person", ("Mei Lin Zhou", "cluster networking"), "engineer who owns cluster networking"),
    Fact("person", ("Declan Byrne", "payments-gateway"), "his team owns payments-gateway"),
    Fact("number", ("0.4%",), "share of checkout calls failing, said once"),
    Fact("number", ("09:20",), "when the stalls began, said once"),
    Fact("tool_output", ("5.012874",), "the slow lookup in the curl timing loop"),
    Fact("tool_output", ("insert_failed=18734",), "conntrack insert failures on one CPU"),
    Fact(
        "tool_output",
        ("2291 (1.53%)",),
        "queries lost in the dnsperf run, restated only as a percentage",
    ),
    Fact("conclusion", ("same source port",), "why one of the two queries is dropped"),
    Fact(
        "decision",
        ("NodeLocal DNSCache", "single-request-reopen"),
        "node cache because musl ignores the option",
    ),
    Fact(
        "decision", ("ndots:2",), "lower ndots for egress-heavy deployments, answered to a question"
    ),
    Fact("constraint", ("60 MB", "Alpine"), "image stays on Alpine under 60 MB"),
    Fact(
        "constraint", ("Tuesday", "change window"), "DaemonSet changes only in the Tuesday window"
    ),
    Fact("number", ("169.254.25.10",), "local DNS address, the later one"),
    Fact("path", ("k8s/addons/node-local-dns.yaml",), "NodeLocal DNSCache manifest written"),
]

K5 = Session(
    "k5-alpine-dns-stalls",
    [
        U(
            f"payments-gateway calls to Stripe sometimes hang for exactly five seconds and then succeed. It's roughly 0.4% of checkout calls and it started around 09:20 on Monday. Declan Byrne's team owns payments-gateway and they swear nothing changed in their code. Manifests are in {_DNS}."
        ),
        A(
            "Exactly five seconds smells like a resolver timeout. Timing a loop of requests from inside one gateway pod, and listing where the pods run.",
            Call(
                "Bash",
                {
                    "command": 'kubectl -n payments exec deploy/payments-gateway -- sh -c \'for i in $(seq 0 159); do printf "%03d " $i; curl -s -o /dev/null -w "code=%{http_code} time_namelookup: %{time_namelookup} time_connect: %{time_connect} time_appconnect: %{time_appconnect} time_total: %{time_total}\\n" https://api.stripe.com/healthcheck; done\'',
                    "description": "Time 160 requests to Stripe from a gateway pod",
                },
                _curl_loop(
                    1501,
                    160,
                    {
                        0.57: "093 code=200 time_namelookup: 5.012874 time_connect: 5.014102 time_appconnect: 5.051977 time_total: 5.139205"
                    },
                ),
            ),
            Call(
                "Bash",
                {
                    "command": "kubectl get pods -A -o wide | grep -E 'payments|coredns|checkout' | head -n 120",
                    "description": "Pods and nodes",
                },
                _pods(1502, 110),
            ),
        ),
        A(
            "One request in the loop spent five seconds in name lookup alone and the rest of that request was normal, so it's DNS. Capturing DNS traffic on the node and reading the pod's resolver setup.",
            Call(
                "Bash",
                {
                    "command": "gcloud compute ssh gke-prod-pool-2-5d1c8e0a-x7kq -- sudo tcpdump -ni any -c 170 udp port 53 2>/dev/null",
                    "description": "Capture DNS packets on the node",
                },
                _tcpdump(1503, 170),
            ),
            Call(
                "Read",
                {"file_path": f"{_DNS}/apps/payments-gateway/base/deployment.yaml"},
                numbered(_GW_DEPLOY),
            ),
            Call(
                "Read",
                {"file_path": f"{_DNS}/apps/payments-gateway/Dockerfile"},
                numbered(_DOCKERFILE),
            ),
        ),
        A(
            "With the default ndots:5, every lookup of api.stripe.com walks the search list first (payments.svc.cluster.local, svc.cluster.local, cluster.local, the compute domain), each as an A and an AAAA query, so one external name costs up to ten packets. The image is Alpine, so the resolver is musl. Checking conntrack on the node.",
            Call(
                "Bash",
                {
                    "command": "gcloud compute ssh gke-prod-pool-2-5d1c8e0a-x7kq -- sudo conntrack -S",
                    "description": "Conntrack statistics per CPU",
                },
                _conntrack(1504),
            ),
            Call(
                "Bash",
                {
                    "command": "kubectl -n kube-system logs -l k8s-app=kube-dns --since=30m | tail -n 160",
                    "description": "CoreDNS query log",
                },
                _coredns_log(1505, 120),
            ),
        ),
        A(
            "The insert_failed counters on every CPU are the clue, and CoreDNS itself answers in well under a millisecond. musl sends the A and AAAA queries in parallel from the same source port. Both packets create the same conntrack tuple at the same instant, the second insert loses the race, the kernel drops that packet, and musl waits out its full 5 second timeout before retrying. Nothing in Declan's code changed; Monday's node pool upgrade moved these nodes to a kernel where the race hits more often."
        ),
        U(
            "Mei Lin Zhou owns cluster networking here, and she asked whether single-request-reopen in dnsConfig would fix it like it does for glibc images."
        ),
        A(
            "It wouldn't: musl ignores single-request-reopen and single-request entirely, it always sends both queries at once from one socket. So the fix has to take DNS out of conntrack. NodeLocal DNSCache does that: a cache on every node on a link-local address, reached through NOTRACK rules, so the race can't happen. Measuring the baseline before changing anything.",
            Call(
                "Bash",
                {
                    "command": "kubectl -n payments run dnsperf --rm -i --image=ghcr.io/acme/dnsperf:2.14 --restart=Never -- dnsperf -s 10.96.0.10 -d queries.txt -l 60 -c 20 -Q 2500",
                    "description": "dnsperf against kube-dns from the payments namespace",
                },
                _dnsperf("2291 (1.53%)", "0.014388", "147586 (98.47%)"),
            ),
        ),
        A(
            "About one and a half percent of queries were lost outright, with a worst case of just over five seconds: the same stall the gateway sees."
        ),
        U(
            "Before you go further: could we just move payments-gateway to a debian-slim image? And should we lower ndots too?"
        ),
        A(
            "On the image, that's your call and Declan's; glibc would help only with single-request-reopen, and the node cache fixes it for every image anyway. On ndots: yes, ndots:2 for the deployments that mostly call external APIs. Names like api.stripe.com have two dots, so with ndots:2 they are tried as absolute names first and skip the four search-list misses, which cuts their DNS packets from ten to two. In-cluster short names like ledger-writer still resolve through the search list."
        ),
        U(
            "Keep it on Alpine: the edge sites pull this image over thin links and the image has to stay under 60 MB. Also, Mei Lin says any DaemonSet change in prod only goes out in the Tuesday change window, so stage it now and she'll apply it then."
        ),
        A(
            "Staying on Alpine. Writing the NodeLocal DNSCache manifest with the usual link-local address, 169.254.20.10, and the ndots patch for the gateway.",
            Call(
                "Grep",
                {
                    "pattern": "dnsPolicy|dnsConfig|ndots|timeout",
                    "path": f"{_DNS}/apps",
                    "output_mode": "content",
                    "-n": True,
                },
                _grep_dnsconfig(1506),
            ),
            Call(
                "Write",
                {"file_path": f"{_DNS}/k8s/addons/node-local-dns.yaml", "content": _NODELOCAL},
                written(f"{_DNS}/k8s/addons/node-local-dns.yaml"),
            ),
            Call(
                "Write",
                {
                    "file_path": f"{_DNS}/apps/payments-gateway/overlays/prod/dns-patch.yaml",
                    "content": 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: payments-gateway\nspec:\n  template:\n    spec:\n      dnsConfig:\n        options:\n          - name: ndots\n            value: "2"  # ndots:2: api.stripe.com is tried as an absolute name first\n',
                },
                written(f"{_DNS}/apps/payments-gateway/overlays/prod/dns-patch.yaml"),
            ),
        ),
        U(
            "Mei Lin says 169.254.20.10 is already taken on our nodes: the GKE metadata proxy sidecar binds it. Pick something else."
        ),
        A(
            "Switching the cache to 169.254.25.10, which is unused on these nodes per `ip addr` on all three pools. Updated in the Corefile binds, the health endpoint and the container args.",
            Call(
                "Bash",
                {
                    "command": f"sed -i 's/169\\.254\\.20\\.10/169.254.25.10/g' {_DNS}/k8s/addons/node-local-dns.yaml && grep -n '169.254' {_DNS}/k8s/addons/node-local-dns.yaml",
                    "description": "Move the cache to the new link-local address",
                },
                '24:        bind 169.254.25.10 10.96.0.10\n30:        prometheus :9253\n31:        health 169.254.25.10:8080\n38:        bind 169.254.25.10 10.96.0.10\n66:          args: ["-localip", "169.254.25.10,10.96.0.10", "-conf", "/etc/Corefile", "-upstreamsvc", "kube-dns-upstream"]',
            ),
        ),
        A(
            "Trying it on the staging cluster before Tuesday: applied the DaemonSet there and reran dnsperf from a payments pod.",
            Call(
                "Bash",
                {
                    "command": "kubectl --context staging apply -f k8s/addons/node-local-dns.yaml && kubectl --context staging -n payments run dnsperf --rm -i --image=ghcr.io/acme/dnsperf:2.14 --restart=Never -- dnsperf -s 10.96.0.10 -d queries.txt -l 60 -c 20 -Q 2500",
                    "description": "Apply on staging and measure again",
                },
                "serviceaccount/node-local-dns created\nconfigmap/node-local-dns created\ndaemonset.apps/node-local-dns created\n"
                + _dnsperf("0 (0.00%)", "0.000412", "149877 (100.00%)"),
            ),
            Call(
                "Bash",
                {
                    "command": 'kubectl --context staging -n payments exec deploy/payments-gateway -- sh -c \'for i in $(seq 0 119); do printf "%03d " $i; curl -s -o /dev/null -w "code=%{http_code} time_namelookup: %{time_namelookup} time_connect: %{time_connect} time_appconnect: %{time_appconnect} time_total: %{time_total}\\n" https://api.stripe.com/healthcheck; done\'',
                    "description": "Same timing loop on staging",
                },
                _curl_loop(1507, 120, {}),
            ),
        ),
        A(
            "No queries lost on staging and no lookup above a few milliseconds in 120 requests. Staged for Mei Lin's Tuesday window: k8s/addons/node-local-dns.yaml on 169.254.25.10, plus the ndots:2 patch for payments-gateway, which stays on Alpine. The cause, for Declan's team: musl's parallel A/AAAA queries from one socket race in conntrack, one gets dropped, and musl waits five seconds."
        ),
    ],
    _K5_FACTS,
)

SESSIONS = [K1, K2, K3, K4, K5]
