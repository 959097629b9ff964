// driver.ts drives a research through the client generated from the API's
// OpenAPI description (openapi-typescript types, openapi-fetch calls): it
// starts one with the topic alone, polls it until it ends, reads its report
// and lists the runs with the list's filters; then it starts one that reads
// the first one's notes (notes_from), and one that names a run not the
// caller's. It prints what it saw as JSON.
// tsc type-checks it against the generated schema.d.ts before it runs.
import createClient from "openapi-fetch";
import type { paths, components } from "./schema.js";

type Run = components["schemas"]["Run"];

// The little of node's globals the driver uses (no @types/node needed).
declare const process: { env: Record<string, string | undefined>; exit(code: number): never };

const baseUrl = process.env.GB_API_URL ?? "";
const key = process.env.GB_API_KEY ?? "";
const topic = process.env.GB_TOPIC ?? "";

const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${key}` } });

const ended = (r: Run): boolean => r.status === "succeeded" || r.status === "failed" || r.status === "timed_out";

async function main(): Promise<void> {
  // Only topic: max_steps, dataset, interactive and the rest are optional.
  const started = await client.POST("/v1/gb/research", { body: { topic } });
  if (started.error || !started.data) {
    throw new Error(`start answered ${started.response.status}: ${JSON.stringify(started.error)}`);
  }
  const id: number = started.data.id;
  let polls = 0;
  let run = started.data as Run;
  const deadline = Date.now() + 90_000;
  while (!ended(run)) {
    if (Date.now() > deadline) {
      throw new Error(`research ${id} did not end: ${run.status} ${run.state}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The path id is an integer in the description, a number here.
    const got = await client.GET("/v1/gb/research/{id}", { params: { path: { id } } });
    if (got.error || !got.data) {
      throw new Error(`get answered ${got.response.status}: ${JSON.stringify(got.error)}`);
    }
    run = got.data;
    polls++;
  }
  const details = await client.GET("/v1/gb/research/{id}", { params: { path: { id } } });
  const tree = await client.GET("/v1/gb/research/{id}/tree", { params: { path: { id } } });
  const active = await client.GET("/v1/gb/research", { params: { query: { status: "active" } } });
  const withReports = await client.GET("/v1/gb/research", { params: { query: { include: "report", limit: 5 } } });
  const missing = await client.GET("/v1/gb/research/{id}", { params: { path: { id: id + 1000 } } });
  // A research that reads the notes of the first, and one that names a
  // research the caller does not have.
  const reading = await client.POST("/v1/gb/research", { body: { topic, notes_from: [id] } });
  const foreign = await client.POST("/v1/gb/research", { body: { topic, notes_from: [id + 1000] } });
  console.log(JSON.stringify({
    id,
    polls,
    status: details.data?.status,
    report: details.data?.report,
    tree_runs: tree.data?.runs.length,
    active_ids: active.data?.runs.map((r) => r.id),
    listed_reports: withReports.data?.runs.map((r) => r.report ?? null),
    missing_status: missing.response.status,
    missing_code: missing.error?.error.code,
    notes_from_status: reading.response.status,
    foreign_notes_status: foreign.response.status,
    foreign_notes_field: foreign.error?.error.field,
  }));
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
