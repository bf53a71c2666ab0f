"""The analytics database's layout: tables loaded from each batch, views over them, reports.

Every table is append-only, one row per event (or per DoD check), keyed by the event's global
position: a batch is loaded by a few `INSERT ... SELECT` statements over the batch, the
JSON taken apart by DuckDB itself. What changes over a run's life (status, a step's end, an
issue's closing) is a view that folds those rows, so a rebuild and an incremental load can
never disagree, and nothing is ever updated in place.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from typing import Final, NamedTuple

#: Bump when a table, a view or a load changes: the file is then rebuilt from zero.
LAYOUT: Final = 15

TRACKING = """CREATE TABLE IF NOT EXISTS analytics_tracking (
    name VARCHAR PRIMARY KEY, position BIGINT NOT NULL, layout INTEGER NOT NULL,
    source VARCHAR NOT NULL)"""

#: A stream's type from the first word of its first event's name (`RunStarted` → run,
#: `IssueOpened` → issue): new aggregates need no change here. (The event's name comes with
#: the batch, from its topic: `analytics_staging.event_name`.)
_STREAM_TYPE = "lower(regexp_extract({0}, '^[A-Z][a-z0-9]*'))"

#: A record's timestamp and payload (JSON, or NULL when it is not JSON). The envelope's
#: timestamp and the payload come cut out on the staging thread (`analytics_staging`); a
#: record of another shape (damaged, or from another release: its `fallback`) is taken
#: apart here, more slowly, by the same rules: the first timestamp in the stored JSON (the
#: envelope's comes first), the payload without the envelope.
_TIMESTAMP = """coalesce(TRY_CAST(timestamp_text AS TIMESTAMP), TRY_CAST(nullif(
    regexp_extract(fallback, '"timestamp":"([^"]*)"', 1), '') AS TIMESTAMP))"""
_FALLBACK_PAYLOAD = r"""TRY_CAST(regexp_replace(fallback, '^\{.*?"event_hash":"[^"]*",?', '{')
    AS JSON)"""
_PAYLOAD = f"coalesce(payload, {_FALLBACK_PAYLOAD})"

#: A batch of stored records (`eventstore.arrow_log`), handed over as columns (`raw_batch`)
#: with the event's name, the envelope's timestamp and the payload already cut out on the
#: staging thread (`analytics_staging`), and the payload already checked as JSON there
#: (null when it is not: `parse`, `NOT_JSON`), goes straight into `events`. Every other
#: table takes the rows worked out there from the batch's rows of its event types (`LOADS`).
INGEST: Final = (
    f"""INSERT OR IGNORE INTO aggregates
    SELECT aggregate_id, {_STREAM_TYPE.format("event_type")}, position
    FROM raw_batch WHERE version = 1""",
    f"""INSERT INTO events
    SELECT r.position, r.aggregate_id,
        coalesce(a.aggregate_type, {_STREAM_TYPE.format("r.event_type")}),
        r.version, r.event_type, r.topic, r.timestamp, r.payload
    FROM (SELECT position, aggregate_id, version, event_type, topic,
            {_TIMESTAMP} AS timestamp, {_PAYLOAD} AS payload FROM raw_batch) r
        LEFT JOIN aggregates a USING (aggregate_id)""",
)

TABLES: Final = (
    """CREATE TABLE aggregates (
        aggregate_id VARCHAR PRIMARY KEY, aggregate_type VARCHAR NOT NULL,
        first_position BIGINT NOT NULL)""",
    # The payloads are most of the file, and much of one run's text repeats in the next
    # (recipes, prompts, slot contents): zstd stores them in a fraction of the space of
    # DuckDB's default choice for text, and chooses faster (no per-segment analysis).
    """CREATE TABLE events (
        position BIGINT NOT NULL, aggregate_id VARCHAR NOT NULL, aggregate_type VARCHAR NOT NULL,
        version INTEGER NOT NULL, event_type VARCHAR NOT NULL, topic VARCHAR NOT NULL,
        timestamp TIMESTAMP, payload JSON USING COMPRESSION zstd)""",
    """CREATE TABLE run_events (
        position BIGINT NOT NULL, run_id VARCHAR NOT NULL, event_type VARCHAR NOT NULL,
        timestamp TIMESTAMP, recipe_id VARCHAR, task VARCHAR, session_id VARCHAR, trace_id VARCHAR,
        total_steps INTEGER, routed BOOLEAN, error VARCHAR, step_id VARCHAR, reason VARCHAR,
        owner VARCHAR, outcome INTEGER, parent_run_id VARCHAR, root_run_id VARCHAR,
        depth INTEGER, loop_name VARCHAR, source_run_id VARCHAR, copied_events INTEGER)""",
    """CREATE TABLE step_events (
        position BIGINT NOT NULL, run_id VARCHAR NOT NULL, event_type VARCHAR NOT NULL,
        timestamp TIMESTAMP, step_id VARCHAR, instance_id VARCHAR, step_index INTEGER, kind VARCHAR,
        phase VARCHAR, tool VARCHAR, agent_archetype VARCHAR, error_type VARCHAR,
        error VARCHAR)""",
    # Every model call recorded, a fork's copies of its source's calls included: the view
    # `agent_calls` is what was paid (see VIEWS).
    """CREATE TABLE agent_calls_all (
        position BIGINT NOT NULL, run_id VARCHAR NOT NULL, step_id VARCHAR, timestamp TIMESTAMP,
        agent_archetype VARCHAR, agent_id VARCHAR, provider VARCHAR, model VARCHAR,
        tier VARCHAR, prompt_type VARCHAR, prompt_variant VARCHAR, input_tokens BIGINT,
        output_tokens BIGINT, tokens_estimated BOOLEAN, latency_ms DOUBLE, cost_usd DOUBLE,
        attempts INTEGER)""",
    """CREATE TABLE model_attempts (
        position BIGINT NOT NULL, run_id VARCHAR NOT NULL, step_id VARCHAR, timestamp TIMESTAMP,
        attempt INTEGER, provider VARCHAR, model VARCHAR, kind VARCHAR, status INTEGER,
        message VARCHAR, will_retry BOOLEAN, retry_in_s DOUBLE)""",
    """CREATE TABLE receipts (
        position BIGINT NOT NULL, receipt_id VARCHAR, run_id VARCHAR NOT NULL,
        session_id VARCHAR, step_id VARCHAR, timestamp TIMESTAMP, tool VARCHAR, summary VARCHAR,
        output_sha256 VARCHAR, duration_ms DOUBLE, args JSON)""",
    """CREATE TABLE dod_results (
        position BIGINT NOT NULL, run_id VARCHAR NOT NULL, timestamp TIMESTAMP, passed BOOLEAN)""",
    """CREATE TABLE dod_checks (
        position BIGINT NOT NULL, run_id VARCHAR NOT NULL, timestamp TIMESTAMP, check_index INTEGER,
        check_type VARCHAR, passed BOOLEAN, detail VARCHAR, "check" JSON)""",
    # An adaptive loop's turns (seed 003): one row per `FlowDecided` with a `loop`, of
    # kind turn (code judged the criteria and asked the Showrunner), choice (its answer, or
    # the typical flow's on a fallback), stall, or end (stable or capped).
    """CREATE TABLE loop_events (
        position BIGINT NOT NULL, run_id VARCHAR NOT NULL, timestamp TIMESTAMP, kind VARCHAR,
        turn INTEGER, iteration INTEGER, held INTEGER, criteria JSON, candidates JSON,
        choice VARCHAR, role VARCHAR, fallback BOOLEAN, errors JSON, stall VARCHAR,
        subject VARCHAR, ending VARCHAR, instance_id VARCHAR, reason VARCHAR)""",
    """CREATE TABLE issue_events (
        position BIGINT NOT NULL, issue_id VARCHAR NOT NULL, event_type VARCHAR NOT NULL,
        timestamp TIMESTAMP, kind VARCHAR, title VARCHAR, detail VARCHAR, run_id VARCHAR,
        session_id VARCHAR, recipe_id VARCHAR, check_type VARCHAR, resolution VARCHAR)""",
)
TABLE_NAMES: Final = (
    "aggregates",
    "events",
    "run_events",
    "step_events",
    "agent_calls_all",
    "model_attempts",
    "receipts",
    "dod_results",
    "dod_checks",
    "loop_events",
    "issue_events",
)

_TERMINAL = "('RunCompleted', 'RunFailed', 'RunCancelled')"
_STEP_END = "('StepCompleted', 'StepFailed')"

#: A fork's copies of its source's events (engine/fork.py): the `copied_events` events right
#: after its `RunForked`, recorded with it in one commit, so at the positions that follow it
#: (each store writes one commit's events at consecutive positions, one commit at a time).
_COPIED_CALL = """EXISTS (SELECT 1 FROM run_events f WHERE f.event_type = 'RunForked'
        AND f.run_id = a.run_id AND a.position > f.position
        AND a.position <= f.position + coalesce(f.copied_events, 0))"""

VIEWS: Final = (
    # The model calls paid for: a fork's copies of its source's calls are the source's
    # spend, and counted there only (`copied_calls`: those copies).
    f"""CREATE OR REPLACE VIEW agent_calls AS
    SELECT a.* FROM agent_calls_all a WHERE NOT {_COPIED_CALL}""",
    f"""CREATE OR REPLACE VIEW copied_calls AS
    SELECT a.* FROM agent_calls_all a WHERE {_COPIED_CALL}""",
    f"""CREATE OR REPLACE VIEW runs AS
    WITH folded AS (
        SELECT run_id,
            any_value(recipe_id) FILTER (WHERE event_type = 'RunStarted') AS recipe_id,
            any_value(task) FILTER (WHERE event_type = 'RunStarted') AS task,
            any_value(session_id) FILTER (WHERE event_type = 'RunStarted') AS session_id,
            any_value(total_steps) FILTER (WHERE event_type = 'RunStarted') AS total_steps,
            any_value(routed) FILTER (WHERE event_type = 'RunStarted') AS routed,
            min(timestamp) FILTER (WHERE event_type = 'RunStarted') AS started_at,
            arg_max(event_type, position) FILTER (WHERE event_type IN {_TERMINAL}) AS ending,
            arg_max(timestamp, position) FILTER (WHERE event_type IN {_TERMINAL}) AS finished_at,
            arg_max(coalesce(error, reason), position)
                FILTER (WHERE event_type IN {_TERMINAL}) AS error,
            count(*) FILTER (WHERE event_type = 'RunResumed') AS resumes,
            count(*) FILTER (WHERE event_type = 'RunClaimed') AS claims,
            arg_max(outcome, position) FILTER (WHERE event_type IN {_TERMINAL}) AS outcome,
            any_value(parent_run_id) FILTER (WHERE event_type = 'RunStarted') AS parent_run_id,
            any_value(root_run_id) FILTER (WHERE event_type = 'RunStarted') AS root_run_id,
            any_value(depth) FILTER (WHERE event_type = 'RunStarted') AS depth,
            any_value(source_run_id) FILTER (WHERE event_type = 'RunStarted') AS forked_from
        FROM run_events GROUP BY run_id),
    dod AS (SELECT run_id, arg_max(passed, position) AS dod_passed
            FROM dod_results GROUP BY run_id),
    opened AS (SELECT run_id, count(DISTINCT issue_id) AS issue_count FROM issue_events
               WHERE event_type IN ('IssueOpened', 'IssueRecurred', 'IssueReopened')
                   AND run_id IS NOT NULL GROUP BY run_id),
    calls AS (SELECT run_id, count(*) AS agent_calls, sum(cost_usd) AS cost_usd
              FROM agent_calls GROUP BY run_id),
    copied AS (SELECT run_id, sum(cost_usd) AS copied_cost_usd
               FROM copied_calls GROUP BY run_id)
    SELECT f.run_id, f.recipe_id, f.task, f.session_id,
        CASE f.ending WHEN 'RunCompleted' THEN 'done' WHEN 'RunFailed' THEN 'failed'
            WHEN 'RunCancelled' THEN 'cancelled' ELSE 'running' END AS status,
        f.started_at, f.finished_at,
        epoch(f.finished_at) - epoch(f.started_at) AS duration_s,
        d.dod_passed, coalesce(o.issue_count, 0) AS issue_count,
        f.error, f.total_steps, f.routed, f.resumes, f.claims,
        coalesce(c.agent_calls, 0) AS agent_calls, c.cost_usd,
        -- Seed 004: the code the run ended with (a cancellation is 20 INTERRUPTED; runs
        -- recorded before codes were read 0 done, 1 failed), and its place in its tree.
        CASE WHEN f.outcome IS NOT NULL THEN f.outcome
            WHEN f.ending = 'RunCompleted' THEN 0 WHEN f.ending = 'RunFailed' THEN 1
            WHEN f.ending = 'RunCancelled' THEN 20 END AS outcome,
        f.parent_run_id, coalesce(f.root_run_id, f.run_id) AS root_run_id,
        coalesce(f.depth, 0) AS depth,
        -- A fork: the run it was taken from, and what its copies of that run's calls had
        -- cost (not its spend: `cost_usd` is only what the fork paid).
        f.forked_from, k.copied_cost_usd
    FROM folded f LEFT JOIN dod d USING (run_id) LEFT JOIN opened o USING (run_id)
        LEFT JOIN calls c USING (run_id) LEFT JOIN copied k USING (run_id)""",
    f"""CREATE OR REPLACE VIEW steps AS
    WITH folded AS (
        SELECT run_id, instance_id,
            arg_max(step_id, position) AS step_id,
            arg_max(step_index, position) FILTER (WHERE event_type = 'StepStarted') AS step_index,
            arg_max(kind, position) FILTER (WHERE event_type = 'StepStarted') AS kind,
            arg_max(phase, position) FILTER (WHERE event_type = 'StepStarted') AS phase,
            arg_max(tool, position) FILTER (WHERE event_type = 'StepStarted') AS tool,
            arg_max(agent_archetype, position)
                FILTER (WHERE event_type = 'StepStarted') AS agent_archetype,
            count(*) FILTER (WHERE event_type = 'StepStarted') AS starts,
            max(position) FILTER (WHERE event_type = 'StepStarted') AS started_position,
            arg_max(timestamp, position) FILTER (WHERE event_type = 'StepStarted') AS started_at,
            max(position) FILTER (WHERE event_type IN {_STEP_END}) AS finished_position,
            arg_max(timestamp, position) FILTER (WHERE event_type IN {_STEP_END}) AS finished_at,
            arg_max(event_type, position) AS last_event,
            arg_max(error, position) FILTER (WHERE event_type = 'StepFailed') AS error
        FROM step_events GROUP BY run_id, instance_id),
    calls AS (
        SELECT f.run_id, f.instance_id, max(a.attempts) AS attempts
        FROM folded f JOIN agent_calls_all a ON a.run_id = f.run_id AND a.step_id = f.step_id
            AND a.position > f.started_position
            AND (f.finished_position IS NULL OR a.position < f.finished_position)
        GROUP BY f.run_id, f.instance_id),
    failed_attempts AS (
        SELECT f.run_id, f.instance_id, count(*) AS failures
        FROM folded f JOIN model_attempts m ON m.run_id = f.run_id AND m.step_id = f.step_id
            AND m.position > f.started_position
            AND (f.finished_position IS NULL OR m.position < f.finished_position)
        GROUP BY f.run_id, f.instance_id),
    run AS (
        SELECT run_id, any_value(recipe_id) FILTER (WHERE event_type = 'RunStarted') AS recipe_id,
            arg_max(event_type, position) FILTER (WHERE event_type IN {_TERMINAL}) AS ending
        FROM run_events GROUP BY run_id)
    SELECT f.run_id, r.recipe_id, f.instance_id, f.step_id, f.step_index, f.kind, f.phase,
        f.tool, f.agent_archetype, coalesce(f.tool, f.agent_archetype) AS performer,
        f.started_at,
        CASE WHEN f.finished_position > f.started_position THEN f.finished_at END AS finished_at,
        CASE WHEN f.finished_position > f.started_position
            THEN (epoch(f.finished_at) - epoch(f.started_at)) * 1000 END AS duration_ms,
        CASE
            WHEN f.last_event = 'StepCompleted' THEN 'done'
            WHEN f.last_event = 'StepFailed' THEN 'failed'
            WHEN r.ending = 'RunCancelled' THEN 'cancelled'
            WHEN f.last_event = 'StepWaiting' THEN 'waiting'
            ELSE 'running' END AS status,
        f.error, f.starts,
        coalesce(c.attempts, fa.failures, 1) AS attempts
    FROM folded f LEFT JOIN run r USING (run_id)
        LEFT JOIN calls c USING (run_id, instance_id)
        LEFT JOIN failed_attempts fa USING (run_id, instance_id)""",
    """CREATE OR REPLACE VIEW issues AS
    SELECT issue_id,
        any_value(kind) FILTER (WHERE event_type = 'IssueOpened') AS kind,
        any_value(title) FILTER (WHERE event_type = 'IssueOpened') AS title,
        any_value(run_id) FILTER (WHERE event_type = 'IssueOpened') AS run_id,
        any_value(recipe_id) FILTER (WHERE event_type = 'IssueOpened') AS recipe_id,
        any_value(check_type) FILTER (WHERE event_type = 'IssueOpened') AS check_type,
        CASE arg_max(event_type, position)
                FILTER (WHERE event_type IN ('IssueClosed', 'IssueReopened'))
            WHEN 'IssueClosed' THEN 'closed' ELSE 'open' END AS status,
        min(timestamp) FILTER (WHERE event_type = 'IssueOpened') AS opened_at,
        arg_max(timestamp, position) FILTER (WHERE event_type = 'IssueClosed') AS closed_at,
        arg_max(resolution, position) FILTER (WHERE event_type = 'IssueClosed') AS resolution,
        count(DISTINCT run_id) AS runs
    FROM issue_events GROUP BY issue_id""",
    # Session plans, from their events as stored (`events`): every plan with its status and
    # task counts, and every task with its latest description, recipe, run and outcome.
    """CREATE OR REPLACE VIEW plan_tasks AS
    WITH ev AS (SELECT position, aggregate_id AS plan_id, event_type, timestamp, payload
                FROM events WHERE aggregate_type = 'plan'),
    placed AS (
        SELECT plan_id, CAST(t->>'$.task_id' AS INTEGER) AS task_id,
            t->>'$.description' AS description, t->>'$.recipe_id' AS recipe_id,
            t->>'$.dod' AS dod, position
        FROM ev, unnest(CAST(payload->'$.tasks' AS JSON[])) AS u(t)
        WHERE event_type = 'PlanCreated'
        UNION ALL
        SELECT plan_id, CAST(payload->>'$.task.task_id' AS INTEGER),
            payload->>'$.task.description', payload->>'$.task.recipe_id',
            payload->>'$.task.dod', position
        FROM ev WHERE event_type IN ('TaskAdded', 'TaskEdited', 'ScopingAnswered')),
    latest AS (
        SELECT plan_id, task_id, arg_max(description, position) AS description,
            arg_max(recipe_id, position) AS recipe_id, arg_max(dod, position) AS dod
        FROM placed GROUP BY plan_id, task_id),
    removed AS (
        SELECT plan_id, CAST(payload->>'$.task_id' AS INTEGER) AS task_id FROM ev
        WHERE event_type = 'TaskRemoved'
        UNION ALL
        SELECT plan_id, c FROM ev, unnest(CAST(payload->'$.cascaded' AS INTEGER[])) AS u(c)
        WHERE event_type = 'TaskRemoved'),
    requested AS (
        SELECT plan_id, CAST(payload->>'$.task_id' AS INTEGER) AS task_id,
            arg_max(payload->>'$.run_id', position) AS run_id, min(timestamp) AS requested_at
        FROM ev WHERE event_type = 'TaskRunRequested' GROUP BY ALL),
    finished AS (
        SELECT plan_id, CAST(payload->>'$.task_id' AS INTEGER) AS task_id,
            arg_max(payload->>'$.outcome', position) AS outcome,
            arg_max(timestamp, position) AS finished_at
        FROM ev WHERE event_type = 'TaskFinished' GROUP BY ALL),
    reviewed AS (
        SELECT plan_id, CAST(payload->>'$.task_id' AS INTEGER) AS task_id,
            arg_max(payload->>'$.decision', position) AS review
        FROM ev WHERE event_type = 'TaskReviewed' GROUP BY ALL),
    forced AS (
        SELECT DISTINCT plan_id, CAST(payload->>'$.task_id' AS INTEGER) AS task_id FROM ev
        WHERE event_type = 'TaskForceStarted')
    SELECT l.plan_id, l.task_id, l.description, l.recipe_id, l.dod, q.run_id,
        CASE WHEN f.outcome IS NOT NULL THEN f.outcome
            WHEN q.run_id IS NOT NULL THEN 'running'
            WHEN l.recipe_id IS NULL THEN 'needs_scoping'
            ELSE 'not_started' END AS state,
        q.requested_at, f.finished_at,
        epoch(f.finished_at) - epoch(q.requested_at) AS duration_s,
        r.review, fo.task_id IS NOT NULL AS forced
    FROM latest l
        LEFT JOIN requested q USING (plan_id, task_id)
        LEFT JOIN finished f USING (plan_id, task_id)
        LEFT JOIN reviewed r USING (plan_id, task_id)
        LEFT JOIN forced fo USING (plan_id, task_id)
    WHERE (l.plan_id, l.task_id) NOT IN (SELECT plan_id, task_id FROM removed)""",
    """CREATE OR REPLACE VIEW plans AS
    WITH ev AS (SELECT position, aggregate_id AS plan_id, event_type, timestamp, payload
                FROM events WHERE aggregate_type = 'plan'),
    folded AS (
        SELECT plan_id,
            any_value(payload->>'$.intent') FILTER (WHERE event_type = 'PlanCreated') AS intent,
            min(timestamp) FILTER (WHERE event_type = 'PlanCreated') AS created_at,
            arg_max(CASE event_type WHEN 'PlanCreated' THEN 'draft'
                    WHEN 'PlanApproved' THEN 'approved' WHEN 'PlanStarted' THEN 'running'
                    WHEN 'PlanPaused' THEN 'paused' WHEN 'PlanResumed' THEN 'running'
                    WHEN 'PlanFinished' THEN payload->>'$.outcome'
                    ELSE 'running' END, position)
                FILTER (WHERE event_type IN ('PlanCreated', 'PlanApproved', 'PlanStarted',
                    'PlanPaused', 'PlanResumed', 'PlanFinished')
                    OR (event_type = 'TaskFinished' AND payload->>'$.outcome' = 'done'))
                AS status,
            arg_max(timestamp, position) FILTER (WHERE event_type = 'PlanFinished')
                AS finished_at,
            count(*) FILTER (WHERE event_type = 'TaskForceStarted') AS force_starts
        FROM ev GROUP BY plan_id),
    counts AS (
        SELECT plan_id, count(*) AS tasks, count(*) FILTER (WHERE state = 'done') AS done,
            count(*) FILTER (WHERE state = 'failed') AS failed
        FROM plan_tasks GROUP BY plan_id)
    SELECT f.plan_id, f.intent, f.status, f.created_at, f.finished_at,
        epoch(f.finished_at) - epoch(f.created_at) AS duration_s,
        coalesce(c.tasks, 0) AS tasks, coalesce(c.done, 0) AS done,
        coalesce(c.failed, 0) AS failed, f.force_starts
    FROM folded f LEFT JOIN counts c USING (plan_id)""",
    # Conference rounds, from their events as stored: each round with its evidence and the
    # fate of its replies (the grounding rate, per round).
    """CREATE OR REPLACE VIEW conference_rounds AS
    SELECT aggregate_id AS round_id,
        any_value(payload->>'$.question') FILTER (WHERE event_type = 'RoundOpened') AS question,
        min(timestamp) FILTER (WHERE event_type = 'RoundOpened') AS opened_at,
        CASE WHEN count(*) FILTER (WHERE event_type = 'RoundClosed') > 0 THEN 'closed'
            WHEN count(*) FILTER (WHERE event_type = 'RoundFailed') > 0 THEN 'failed'
            WHEN count(*) FILTER (WHERE event_type = 'RepliesCollected') > 0 THEN 'collected'
            ELSE 'open' END AS status,
        count(*) FILTER (WHERE event_type = 'EvidenceReceipt') AS receipts,
        count(*) FILTER (WHERE event_type = 'ToolCallRefused') AS refused_calls,
        count(*) FILTER (WHERE event_type = 'AgentCallRecorded') AS agent_calls,
        count(*) FILTER (WHERE event_type = 'ReplyAccepted'
            AND NOT CAST(payload->>'$.abstained' AS BOOLEAN)) AS accepted,
        count(*) FILTER (WHERE event_type = 'ReplyAccepted'
            AND CAST(payload->>'$.abstained' AS BOOLEAN)) AS abstained,
        count(*) FILTER (WHERE event_type = 'ReplyRejected') AS rejected
    FROM events WHERE aggregate_type = 'round' GROUP BY aggregate_id""",
    # Each loop turn with its run's recipe and loop name (the recipe's `loop.name`).
    """CREATE OR REPLACE VIEW loop_turns AS
    WITH run AS (
        SELECT run_id, any_value(recipe_id) FILTER (WHERE event_type = 'RunStarted') AS recipe_id,
            any_value(loop_name) FILTER (WHERE event_type = 'RunStarted') AS loop_name
        FROM run_events GROUP BY run_id)
    SELECT l.position, l.run_id, r.recipe_id, coalesce(r.loop_name, r.recipe_id) AS loop_name,
        l.timestamp, l.turn, l.kind, l.iteration, l.held,
        CAST(json_array_length(json_keys(l.criteria)) AS INTEGER) AS criteria_count,
        l.criteria, l.candidates, l.choice, l.role, coalesce(l.fallback, false) AS fallback,
        l.errors, l.stall IS NOT NULL AS stall, l.stall AS stall_reason, l.subject, l.ending,
        l.instance_id, l.reason
    FROM loop_events l LEFT JOIN run r USING (run_id)""",
    # Each fork an eval ran (issue 31), compared with its source: one row per fork.
    """CREATE OR REPLACE VIEW eval_forks AS
    SELECT position, aggregate_id AS eval_run_id, timestamp,
        payload->>'$.source_run_id' AS source_run_id, payload->>'$.fork_run_id' AS fork_run_id,
        payload->>'$.from_step' AS from_step, payload->>'$.status_before' AS status_before,
        payload->>'$.status_after' AS status_after,
        CAST(payload->>'$.cost_before_usd' AS DOUBLE) AS cost_before_usd,
        CAST(payload->>'$.cost_after_usd' AS DOUBLE) AS cost_after_usd,
        CAST(payload->>'$.tokens_before' AS BIGINT) AS tokens_before,
        CAST(payload->>'$.tokens_after' AS BIGINT) AS tokens_after,
        CAST(payload->>'$.latency_before_ms' AS DOUBLE) AS latency_before_ms,
        CAST(payload->>'$.latency_after_ms' AS DOUBLE) AS latency_after_ms,
        json_array_length(payload->'$.changed_steps') AS changed_steps,
        payload->'$.dod_before' AS dod_before, payload->'$.dod_after' AS dod_after,
        payload->'$.verdicts_changed' AS verdicts_changed
    FROM events WHERE event_type = 'EvalForkEnded'""",
    # Fork families (issue 31): each run forks were first taken from (one whose source is
    # not a run here) with every fork below it, and what the family paid: each run's own
    # calls, a fork's copies of its source's calls apart (`copied_cost_usd`).
    """CREATE OR REPLACE VIEW fork_families AS
    WITH RECURSIVE started AS (
        SELECT run_id, any_value(source_run_id) FILTER (WHERE event_type = 'RunStarted')
            AS source_run_id
        FROM run_events GROUP BY run_id),
    lineage(run_id, root_run_id, hops) AS (
        SELECT s.run_id, s.run_id, 0 FROM started s
        WHERE s.source_run_id IS NULL
            OR s.source_run_id NOT IN (SELECT run_id FROM started)
        UNION ALL
        SELECT s.run_id, l.root_run_id, l.hops + 1
        FROM started s JOIN lineage l ON s.source_run_id = l.run_id
        WHERE l.hops < 1000),
    paid AS (SELECT run_id, sum(cost_usd) AS cost_usd, sum(input_tokens) AS input_tokens,
                 sum(output_tokens) AS output_tokens
             FROM agent_calls GROUP BY run_id),
    copied AS (SELECT run_id, sum(cost_usd) AS copied_cost_usd FROM copied_calls
               GROUP BY run_id)
    SELECT l.root_run_id, count(*) AS runs, count(*) - 1 AS forks,
        sum(p.cost_usd) AS cost_usd, coalesce(sum(p.input_tokens), 0) AS input_tokens,
        coalesce(sum(p.output_tokens), 0) AS output_tokens,
        sum(k.copied_cost_usd) AS copied_cost_usd, max(l.hops) AS deepest
    FROM lineage l LEFT JOIN paid p USING (run_id) LEFT JOIN copied k USING (run_id)
    GROUP BY l.root_run_id HAVING count(*) > 1""",
)
VIEW_NAMES: Final = (
    "agent_calls", "copied_calls", "runs", "steps", "issues", "plans", "plan_tasks",
    "conference_rounds", "loop_turns", "eval_forks", "fork_families",
)  # fmt: skip

# -- loading one batch ---------------------------------------------------------------------
# Every table but `events` is loaded from the batch's rows of its event types, picked out
# on the staging thread (`analytics_staging.rows_of_types`) and parsed there by an in-memory
# DuckDB (`parse`), every payload once, into the shape below (`json_transform`: a field
# missing or of another type reads as NULL).


def _shape(**fields: object) -> str:
    return "'" + json.dumps(fields, separators=(",", ":")) + "'"


_V, _I, _B, _D = "VARCHAR", "INTEGER", "BOOLEAN", "DOUBLE"
_RUN = _shape(
    recipe_id=_V, task={"description": _V}, session_id=_V, trace_id=_V, total_steps=_I,
    routing="JSON", error=_V, step_id=_V, reason=_V, owner=_V, outcome=_I,
    origin={"parent_run_id": _V, "root_run_id": _V, "depth": _I, "source_run_id": _V},
    recipe={"loop": {"name": _V}}, source_run_id=_V, copied_events=_I,
)  # fmt: skip
_LOOP = _shape(
    instance_id=_V, reason=_V,
    loop={
        "kind": _V, "turn": _I, "iteration": _I, "held": _I, "criteria": "JSON",
        "candidates": "JSON", "choice": _V, "role": _V, "fallback": _B, "errors": "JSON",
        "stall": _V, "subject": _V, "ending": _V,
    },
)  # fmt: skip
_SENTINEL = _shape(
    step_id=_V, agent_archetype=_V, agent_id=_V, provider=_V, model=_V, tier=_V,
    input_tokens="BIGINT", output_tokens="BIGINT", latency_ms=_D, cost_usd=_D, attempts=_I,
)  # fmt: skip
_STEP = _shape(
    step_id=_V, instance_id=_V, step_index=_I, kind=_V, phase=_V, tool=_V,
    agent_archetype=_V, error_type=_V, error=_V,
)  # fmt: skip
_AGENT = _shape(
    step_id=_V, agent_archetype=_V, agent_id=_V, provider=_V, model=_V, tier=_V,
    prompt_type=_V, prompt_variant=_V,
    usage={"input_tokens": "BIGINT", "output_tokens": "BIGINT", "estimated": _B},
    latency_ms=_D, cost_usd=_D, attempts=_I, repeats_items=_B,
)  # fmt: skip
_CHIEF = _shape(
    purpose=_V, role=_V, prompt_type=_V, provider=_V, model=_V, tier=_V,
    usage={"input_tokens": "BIGINT", "output_tokens": "BIGINT", "estimated": _B},
    latency_ms=_D, cost_usd=_D, attempts=_I,
)  # fmt: skip
_LADDER = _shape(
    step_id=_V, rung=_V, which=_V, role=_V, prompt_type=_V, provider=_V, model=_V, tier=_V,
    usage={"input_tokens": "BIGINT", "output_tokens": "BIGINT", "estimated": _B},
    latency_ms=_D, cost_usd=_D, attempts=_I,
)  # fmt: skip
_REJECTED = _shape(
    step_id=_V, provider=_V, model=_V,
    usage={"input_tokens": "BIGINT", "output_tokens": "BIGINT", "estimated": _B},
    cost_usd=_D,
)  # fmt: skip
_ROLE = _shape(
    role=_V, micro_step=_V, tier=_V, provider=_V, model=_V, input_tokens="BIGINT",
    output_tokens="BIGINT", latency_ms=_D, cost_usd=_D, attempts=_I,
)  # fmt: skip
_ITEM = _shape(
    step_id=_V, index=_I, total=_I, agent_id=_V, provider=_V, model=_V,
    input_tokens="BIGINT", output_tokens="BIGINT", latency_ms=_D, attempts=_I, checked=_B,
)  # fmt: skip
_CHECKED = _shape(
    step_id=_V, agent_id=_V, provider=_V, model=_V, input_tokens="BIGINT",
    output_tokens="BIGINT", latency_ms=_D, cost_usd=_D, attempts=_I,
)  # fmt: skip
_ATTEMPT = _shape(
    step_id=_V, attempt=_I, provider=_V, model=_V, kind=_V, status=_I, message=_V,
    will_retry=_B, retry_in_s=_D,
)  # fmt: skip
_RECEIPT = _shape(
    receipt_id=_V, session_id=_V, step_id=_V, tool=_V, summary=_V, output_sha256=_V,
    duration_ms=_D, args="JSON",
)  # fmt: skip
_DOD = _shape(
    passed=_B, results=[{"index": _I, "check": "JSON", "passed": _B, "detail": _V}]
)  # fmt: skip
_ISSUE = _shape(
    kind=_V, title=_V, detail=_V, run_id=_V, session_id=_V, recipe_id=_V,
    check={"check": _V}, resolution=_V, reason=_V,
)  # fmt: skip


class Load(NamedTuple):
    """The rows `table` takes from a batch's rows of `types`, their payloads parsed into
    `shape` (`parse`)."""

    table: str
    types: tuple[str, ...]
    shape: str
    #: Over the rows parsed (`parsed`: position, aggregate_id, event_type, timestamp, j).
    select: str


def parse(shape: str) -> str:
    """The batch's rows of one load's types (given as `load_rows`), each with its timestamp
    and its payload parsed into `shape` as `j`, and `not_json` where its payload does not
    parse (`events` then keeps no payload: each payload is checked as JSON where it is
    parsed anyway, not twice). It is kept as a table (`parsed`) for the loads of these
    rows: a filter on `j` pushed down into it would parse every payload once more."""
    return f"""SELECT position, aggregate_id, event_type, timestamp,
        coalesce(parsed, json_transform({_FALLBACK_PAYLOAD}, {shape})) AS j,
        payload IS NOT NULL AND parsed IS NULL AS not_json
    FROM (SELECT position, aggregate_id, event_type, {_TIMESTAMP} AS timestamp, payload,
            fallback, TRY(json_transform(payload, {shape})) AS parsed FROM load_rows)"""


#: The positions of the batch's other rows (given as `load_rows`) whose payload is not JSON.
NOT_JSON: Final = "SELECT position FROM load_rows WHERE NOT json_valid(payload)"

_RUN_TYPES = (
    "RunStarted", "RunCompleted", "RunFailed", "RunCancelled", "RunResumed", "RunClaimed",
    "RunReleased", "RunForked",
)  # fmt: skip
_STEP_TYPES = ("StepStarted", "StepCompleted", "StepFailed", "StepWaiting")
_ISSUE_TYPES = ("IssueOpened", "IssueClosed", "IssueReopened", "IssueRecurred")

#: The tables taken from the batch's rows of their event types, in this order.
LOADS: Final = (
    Load(
        "run_events",
        _RUN_TYPES,
        _RUN,
        """SELECT position, aggregate_id, event_type, timestamp, j.recipe_id, j.task.description,
        j.session_id, j.trace_id, j.total_steps,
        CASE WHEN event_type = 'RunStarted' THEN j.routing IS NOT NULL END,
        j.error, j.step_id, j.reason, j.owner, j.outcome, j.origin.parent_run_id,
        j.origin.root_run_id, j.origin.depth, j.recipe.loop.name,
        coalesce(j.origin.source_run_id, j.source_run_id), j.copied_events
    FROM parsed""",
    ),
    Load(
        "step_events",
        _STEP_TYPES,
        _STEP,
        """SELECT position, aggregate_id, event_type, timestamp, j.step_id,
        coalesce(nullif(j.instance_id, ''), j.step_id), j.step_index,
        CASE WHEN event_type = 'StepStarted' THEN coalesce(nullif(j.kind, ''),
            CASE j.phase WHEN 'a' THEN 'tool' WHEN 'b' THEN 'agent' END) END,
        j.phase, j.tool, j.agent_archetype, j.error_type, j.error
    FROM parsed""",
    ),
    # The offline model counts words, not tokens: its usage is an estimate.
    Load(
        "agent_calls_all",
        ("AgentResponded", "AgentMicroStepResponded"),
        _AGENT,
        """SELECT position, aggregate_id, j.step_id, timestamp, j.agent_archetype, j.agent_id,
        j.provider, j.model, j.tier, j.prompt_type, j.prompt_variant, j.usage.input_tokens,
        j.usage.output_tokens, coalesce(j.usage.estimated, j.provider = 'offline'),
        j.latency_ms, j.cost_usd, coalesce(j.attempts, 1)
    FROM parsed WHERE NOT coalesce(j.repeats_items, false)""",
    ),
    # Every other model call is a row too: the Chief's (planning, reviewing, choosing a
    # round's tools; `run_id` is then the plan's or the round's id, `step_id` the purpose),
    # a conference role's, and a loop's items before its last (the step's own
    # `AgentResponded` stands for its last item).
    Load(
        "agent_calls_all",
        ("ModelCalled",),
        _CHIEF,
        """SELECT position, aggregate_id, j.purpose, timestamp, j.role, j.role, j.provider,
        j.model, j.tier, j.prompt_type, NULL, j.usage.input_tokens, j.usage.output_tokens,
        coalesce(j.usage.estimated, j.provider = 'offline'), j.latency_ms, j.cost_usd,
        coalesce(j.attempts, 1)
    FROM parsed""",
    ),
    # An escalation ladder's calls around a step (consult, synthesis, triage), and replies
    # a contract rejected: paid for, so counted, and charged to their step.
    Load(
        "agent_calls_all",
        ("LadderCallRecorded",),
        _LADDER,
        """SELECT position, aggregate_id, j.step_id, timestamp, j.role, j.role, j.provider,
        j.model, j.tier, j.prompt_type, NULL, j.usage.input_tokens, j.usage.output_tokens,
        coalesce(j.usage.estimated, j.provider = 'offline'), j.latency_ms, j.cost_usd,
        coalesce(j.attempts, 1)
    FROM parsed""",
    ),
    Load(
        "agent_calls_all",
        ("AgentReplyRejected",),
        _REJECTED,
        """SELECT position, aggregate_id, j.step_id, timestamp, NULL, NULL, j.provider, j.model,
        NULL, 'rejected_reply', NULL, j.usage.input_tokens, j.usage.output_tokens,
        coalesce(j.usage.estimated, j.provider = 'offline'), NULL, j.cost_usd, 1
    FROM parsed""",
    ),
    Load(
        "agent_calls_all",
        ("AgentCallRecorded",),
        _ROLE,
        """SELECT position, aggregate_id, NULL, timestamp, j.role, j.role, j.provider, j.model,
        j.tier, j.micro_step, NULL, j.input_tokens, j.output_tokens, j.provider = 'offline',
        j.latency_ms, j.cost_usd, coalesce(j.attempts, 1)
    FROM parsed""",
    ),
    Load(
        "agent_calls_all",
        ("ForEachItemCompleted",),
        _ITEM,
        """SELECT position, aggregate_id, j.step_id, timestamp, NULL, j.agent_id, j.provider,
        j.model, NULL, NULL, NULL, j.input_tokens, j.output_tokens, j.provider = 'offline',
        j.latency_ms, NULL, coalesce(j.attempts, 1)
    FROM parsed WHERE j.index < j.total - 1 AND NOT coalesce(j.checked, false)""",
    ),
    # A checked loop's calls: every draft of an item and every check of a draft.
    Load(
        "agent_calls_all",
        ("ForEachItemDrafted", "ForEachItemChecked"),
        _CHECKED,
        """SELECT position, aggregate_id, j.step_id, timestamp, NULL, j.agent_id, j.provider,
        j.model, NULL, event_type, NULL, j.input_tokens, j.output_tokens,
        j.provider = 'offline', j.latency_ms, j.cost_usd, coalesce(j.attempts, 1)
    FROM parsed""",
    ),
    # A verify loop's calls (`domain/sentinel.py`): each verification and each fix is a
    # model call of its own, recorded by no `AgentResponded`.
    Load(
        "agent_calls_all",
        ("SentinelVerified", "SentinelFixed"),
        _SENTINEL,
        """SELECT position, aggregate_id, j.step_id, timestamp, j.agent_archetype, j.agent_id,
        j.provider, j.model, j.tier, event_type, NULL, j.input_tokens, j.output_tokens,
        j.provider = 'offline', j.latency_ms, j.cost_usd, coalesce(j.attempts, 1)
    FROM parsed""",
    ),
    Load(
        "model_attempts",
        ("ModelAttemptFailed",),
        _ATTEMPT,
        """SELECT position, aggregate_id, j.step_id, timestamp, j.attempt, j.provider, j.model,
        j.kind, j.status, j.message, j.will_retry, j.retry_in_s
    FROM parsed""",
    ),
    Load(
        "receipts",
        ("ReceiptIssued",),
        _RECEIPT,
        """SELECT position, j.receipt_id, aggregate_id, j.session_id, j.step_id, timestamp, j.tool,
        j.summary, j.output_sha256, j.duration_ms, j.args
    FROM parsed""",
    ),
    Load(
        "dod_results",
        ("DodChecked",),
        _DOD,
        """SELECT position, aggregate_id, timestamp, j.passed
    FROM parsed""",
    ),
    Load(
        "dod_checks",
        ("DodChecked",),
        _DOD,
        """SELECT position, run_id, timestamp, r.index, r."check"->>'check', r.passed, r.detail,
        r."check"
    FROM (SELECT position, aggregate_id AS run_id, timestamp, unnest(j.results) AS r
          FROM parsed)""",
    ),
    Load(
        "loop_events",
        ("FlowDecided",),
        _LOOP,
        """SELECT position, aggregate_id, timestamp, j.loop.kind, j.loop.turn, j.loop.iteration,
        j.loop.held, j.loop.criteria, j.loop.candidates, j.loop.choice, j.loop.role,
        j.loop.fallback, j.loop.errors, j.loop.stall, j.loop.subject, j.loop.ending,
        j.instance_id, j.reason
    FROM parsed WHERE j.loop IS NOT NULL""",
    ),
    Load(
        "issue_events",
        _ISSUE_TYPES,
        _ISSUE,
        """SELECT position, aggregate_id, event_type, timestamp, j.kind, j.title, j.detail,
        j.run_id, j.session_id, j.recipe_id, j."check"."check", coalesce(j.resolution, j.reason)
    FROM parsed""",
    ),
)


# -- built-in reports ------------------------------------------------------------------------


class Report(NamedTuple):
    title: str
    sql: str
    #: The column the report is named for: the one its chart draws (a p95, a rate, a count).
    figure: str
    #: The views and tables restricted to a time range when one is asked for (`ranged_sql`):
    #: empty when the report cannot be restricted.
    ranged: tuple[str, ...] = ()

    @property
    def time_range(self) -> bool:
        return bool(self.ranged)


REPORTS: Final = {
    "slowest_steps": Report(
        "Step duration by recipe and step: p50, p95 and max, slowest p95 first",
        """SELECT recipe_id, step_id, kind, count(*) AS steps,
            round(quantile_cont(duration_ms, 0.5), 1) AS p50_ms,
            round(quantile_cont(duration_ms, 0.95), 1) AS p95_ms,
            round(max(duration_ms), 1) AS max_ms
        FROM steps WHERE duration_ms IS NOT NULL
        GROUP BY recipe_id, step_id, kind ORDER BY p95_ms DESC, recipe_id, step_id""",
        figure="p95_ms",
        ranged=("steps",),
    ),
    "step_failures": Report(
        "Failure rate by recipe and step",
        """SELECT recipe_id, step_id, count(*) AS steps,
            count(*) FILTER (WHERE status = 'failed') AS failed,
            round(100.0 * count(*) FILTER (WHERE status = 'failed') / count(*), 1)
                AS failure_pct
        FROM steps GROUP BY recipe_id, step_id
        ORDER BY failure_pct DESC, failed DESC, recipe_id, step_id""",
        figure="failure_pct",
        ranged=("steps",),
    ),
    "run_outcomes": Report(
        "Runs by recipe and how they ended, with the failure rate",
        """SELECT recipe_id, count(*) AS runs,
            count(*) FILTER (WHERE status = 'done') AS done,
            count(*) FILTER (WHERE status = 'failed') AS failed,
            count(*) FILTER (WHERE status = 'cancelled') AS cancelled,
            count(*) FILTER (WHERE status = 'running') AS running,
            count(*) FILTER (WHERE dod_passed = false) AS dod_failed,
            round(100.0 * count(*) FILTER (WHERE status = 'failed') / count(*), 1)
                AS failure_pct,
            round(avg(duration_s), 3) AS avg_duration_s
        FROM runs GROUP BY recipe_id ORDER BY recipe_id""",
        figure="failure_pct",
        ranged=("runs",),
    ),
    "run_trees": Report(
        "Run trees (seed 004): each root with the runs below it, depth, outcomes and cost",
        """SELECT t.root_run_id, any_value(r.recipe_id) AS root_recipe,
            any_value(r.outcome) AS root_outcome, count(*) AS runs, max(t.depth) AS deepest,
            count(*) FILTER (WHERE t.outcome = 0) AS succeeded,
            count(*) FILTER (WHERE t.outcome NOT IN (0, 12)) AS not_succeeded,
            sum(t.cost_usd) AS cost_usd, sum(t.agent_calls) AS agent_calls,
            epoch(max(t.finished_at)) - epoch(min(t.started_at)) AS wall_s
        FROM runs t JOIN runs r ON r.run_id = t.root_run_id
        GROUP BY t.root_run_id HAVING count(*) > 1 ORDER BY min(t.started_at)""",
        figure="runs",
        ranged=("runs",),
    ),
    "evals": Report(
        "Evals (issue 31): per eval, the forks run, run statuses that changed, and cost, "
        "tokens and latency before and after",
        """SELECT eval_run_id, count(*) AS forks,
            count(*) FILTER (WHERE status_before <> status_after) AS status_changed,
            count(*) FILTER (WHERE status_before = 'done' AND status_after <> 'done')
                AS done_to_not_done,
            round(sum(cost_before_usd), 6) AS cost_before_usd,
            round(sum(cost_after_usd), 6) AS cost_after_usd,
            sum(tokens_before) AS tokens_before, sum(tokens_after) AS tokens_after,
            round(sum(latency_before_ms), 1) AS latency_before_ms,
            round(sum(latency_after_ms), 1) AS latency_after_ms
        FROM eval_forks GROUP BY eval_run_id ORDER BY min(timestamp)""",
        figure="status_changed",
        ranged=("eval_forks",),
    ),
    # Adaptive loops (seed 003): how long a loop takes to settle, how often the Showrunner's
    # answer could not be used, and which steps it runs again.
    "loops": Report(
        "Adaptive loops: turns per run, stabilization rate (stable / ended), fallback rate "
        "(fallback choices / choices), stalls",
        """SELECT loop_name, recipe_id, count(DISTINCT run_id) AS runs,
            count(*) FILTER (WHERE kind = 'turn') AS turns,
            round(count(*) FILTER (WHERE kind = 'turn') / count(DISTINCT run_id), 2)
                AS turns_per_run,
            count(*) FILTER (WHERE kind = 'end') AS ended,
            count(*) FILTER (WHERE ending = 'stable') AS stable,
            count(*) FILTER (WHERE ending = 'capped') AS capped,
            round(100.0 * count(*) FILTER (WHERE ending = 'stable')
                / nullif(count(*) FILTER (WHERE kind = 'end'), 0), 1) AS stabilization_pct,
            count(*) FILTER (WHERE kind = 'choice' OR (kind = 'end' AND fallback)) AS choices,
            count(*) FILTER (WHERE fallback) AS fallbacks,
            round(100.0 * count(*) FILTER (WHERE fallback) / nullif(count(*) FILTER (
                WHERE kind = 'choice' OR (kind = 'end' AND fallback)), 0), 1) AS fallback_pct,
            count(*) FILTER (WHERE stall) AS stalls
        FROM loop_turns GROUP BY loop_name, recipe_id ORDER BY loop_name, recipe_id""",
        figure="turns_per_run",
        ranged=("loop_turns",),
    ),
    "loop_steps": Report(
        "Adaptive loops' steps: how often each was chosen, and repeated within a run",
        """WITH per_run AS (
            SELECT loop_name, choice AS step_id, run_id, count(*) AS chosen,
                count(*) FILTER (WHERE fallback) AS by_fallback
            FROM loop_turns WHERE kind = 'choice' AND choice IS NOT NULL
            GROUP BY loop_name, choice, run_id)
        SELECT loop_name, step_id, count(*) AS runs, sum(chosen) AS chosen,
            sum(chosen - 1) AS repeats, round(sum(chosen - 1) / count(*), 2) AS repeats_per_run,
            max(chosen) AS most_in_a_run, sum(by_fallback) AS by_fallback
        FROM per_run GROUP BY loop_name, step_id ORDER BY loop_name, repeats DESC, step_id""",
        figure="repeats",
        ranged=("loop_turns",),
    ),
    "dod_failures": Report(
        "Definition-of-done checks by recipe and check, failures first",
        """SELECT r.recipe_id, d.check_index, d.check_type, count(*) AS checked,
            count(*) FILTER (WHERE NOT d.passed) AS failed,
            any_value(d.detail) FILTER (WHERE NOT d.passed) AS example
        FROM dod_checks d LEFT JOIN runs r USING (run_id)
        GROUP BY r.recipe_id, d.check_index, d.check_type
        ORDER BY failed DESC, r.recipe_id, d.check_index""",
        figure="failed",
        ranged=("dod_checks", "runs"),
    ),
    "model_usage": Report(
        "Model calls, tokens, latency and cost by role (agent archetype) and model",
        """SELECT agent_archetype AS role, provider, model, tier, count(*) AS calls,
            sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
            bool_or(tokens_estimated) AS estimated, round(sum(cost_usd), 6) AS cost_usd,
            round(quantile_cont(latency_ms, 0.5), 1) AS p50_latency_ms,
            sum(attempts - 1) AS retries
        FROM agent_calls GROUP BY agent_archetype, provider, model, tier
        ORDER BY cost_usd DESC NULLS LAST, calls DESC, role""",
        figure="cost_usd",
        ranged=("agent_calls",),
    ),
    "runs_per_day": Report(
        "Runs started per day and recipe, and how they ended",
        """SELECT CAST(started_at AS DATE) AS day, recipe_id, count(*) AS runs,
            count(*) FILTER (WHERE status = 'done') AS done,
            count(*) FILTER (WHERE status = 'failed') AS failed,
            count(*) FILTER (WHERE status = 'cancelled') AS cancelled,
            round(avg(duration_s), 3) AS avg_duration_s
        FROM runs GROUP BY day, recipe_id ORDER BY day, recipe_id""",
        figure="runs",
        ranged=("runs",),
    ),
    "retries": Report(
        "Failed model attempts by recipe, step and model: retried, and given up",
        """SELECT r.recipe_id, m.step_id, m.provider, m.model, m.kind,
            count(*) AS failed_attempts,
            count(*) FILTER (WHERE m.will_retry) AS retried,
            count(*) FILTER (WHERE NOT m.will_retry) AS gave_up
        FROM model_attempts m LEFT JOIN runs r USING (run_id)
        GROUP BY r.recipe_id, m.step_id, m.provider, m.model, m.kind
        ORDER BY failed_attempts DESC, r.recipe_id, m.step_id""",
        figure="failed_attempts",
        ranged=("model_attempts", "runs"),
    ),
    "stop_hooks": Report(
        "STOP_HOOKs (an output contract or a write the recipe does not allow) by recipe",
        """SELECT r.recipe_id, e.payload->>'step_id' AS step_id, e.event_type,
            count(*) AS stop_hooks, any_value(coalesce(e.payload->>'reason',
                e.payload->>'detail', e.payload->>'title')) AS example
        FROM events e LEFT JOIN runs r ON r.run_id = coalesce(
            e.payload->>'run_id', CASE WHEN e.aggregate_type = 'run' THEN e.aggregate_id END)
        WHERE replace(upper(e.event_type), '_', '') LIKE '%STOPHOOK%'
            OR (e.event_type = 'IssueOpened'
                AND replace(upper(e.payload->>'kind'), '_', '') LIKE '%STOPHOOK%')
        GROUP BY r.recipe_id, step_id, e.event_type
        ORDER BY stop_hooks DESC, r.recipe_id""",
        figure="stop_hooks",
        ranged=("events",),
    ),
}


# -- a report over a time range ---------------------------------------------------------------
# A report asked for a time range reads, in place of each source it names in `ranged`, the
# same rows restricted to that range: a CTE of the source's name (`main.<name>` being the
# view or table itself) shadows it in the report's own SQL, and only there (a view reading
# that source is bound apart). A run is in the range when it started in it, and then counts
# whole: its steps, model calls, checks and loop turns, whenever they happened. What belongs
# to no run's life (an eval's forks, a stored event) counts by its own timestamp.

_RUNS_IN_RANGE = """_runs_in_range AS (
    SELECT DISTINCT run_id FROM main.run_events WHERE event_type = 'RunStarted' AND {within})"""
_OF_A_RUN_IN_RANGE = "run_id IN (SELECT run_id FROM _runs_in_range)"
_RANGED: Final = {
    "runs": _OF_A_RUN_IN_RANGE,
    "steps": _OF_A_RUN_IN_RANGE,
    "agent_calls": _OF_A_RUN_IN_RANGE,
    "model_attempts": _OF_A_RUN_IN_RANGE,
    "dod_checks": _OF_A_RUN_IN_RANGE,
    "loop_turns": _OF_A_RUN_IN_RANGE,
    "eval_forks": "{within}",
    "events": "{within}",
}
RANGEABLE: Final = frozenset(_RANGED)


def _literal(at: datetime) -> str:
    """A timestamp as SQL, written from the datetime's fields (never from anyone's text): UTC,
    as the tables hold it."""
    if at.tzinfo is not None:
        at = at.astimezone(UTC).replace(tzinfo=None)
    return f"TIMESTAMP '{at.strftime('%Y-%m-%d %H:%M:%S.%f')}'"


def parse_instant(text: str, *, end: bool = False) -> datetime:
    """An ISO 8601 date or date-time as UTC: one without an offset is read as UTC. A date
    alone is its day's start, or, for the end of a range (`end`), the next day's start: the
    day named is included. ValueError for anything else."""
    raw = text.strip()
    try:
        if len(raw) == 10:  # a date alone: YYYY-MM-DD
            day = date.fromisoformat(raw)
            at = datetime(day.year, day.month, day.day, tzinfo=UTC)
            if not end:
                return at
            return at + timedelta(days=1) if day < date.max else datetime.max.replace(tzinfo=UTC)
        parsed = datetime.fromisoformat(raw)
    except OverflowError as exc:
        raise ValueError(str(exc)) from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def ranged_sql(report: Report, since: datetime | None, until: datetime | None) -> str:
    """The report's SQL over what happened from `since` (included) to `until` (excluded),
    either end open when None; its own SQL when neither is given. A report that cannot be
    restricted (`time_range` false) is refused (ValueError), never answered unrestricted."""
    if since is None and until is None:
        return report.sql
    if not report.time_range:
        raise ValueError("this report cannot be restricted to a time range")
    bounds = [
        *([f"timestamp >= {_literal(since)}"] if since is not None else []),
        *([f"timestamp < {_literal(until)}"] if until is not None else []),
    ]
    within = " AND ".join(bounds)
    ctes = [_RUNS_IN_RANGE.format(within=within)]
    for source in report.ranged:
        condition = _RANGED[source].format(within=within)
        ctes.append(f"{source} AS (SELECT * FROM main.{source} WHERE {condition})")
    prefix = "WITH " + ",\n".join(ctes)
    sql = report.sql.lstrip()
    if sql[:5].upper() == "WITH ":
        return f"{prefix},\n{sql[5:]}"
    return f"{prefix}\n{sql}"
