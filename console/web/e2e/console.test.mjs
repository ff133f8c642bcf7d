// The console's pages in a real browser, against a real strand server with
// runs the Go test made (cmd/strand/console_browser_test.go, which starts
// all this: go test ./cmd/strand -run TestConsoleInBrowser -v).
//
// One test per page. Each opens the page, checks what it shows against the
// runs of the fixture and the API, and audits it in both themes (a
// full-page screenshot each, axe-core: serious and critical violations
// fail); an error in the browser's console, or one the page throws, fails
// it too. A new page adds one test: checkPage({name, path, check}) does
// the rest (see helpers.mjs). The tests run in order: the tests of
// schedules, run operations and batches, and the start-again test, which
// add runs, come after those that count runs, and the signal test, which
// completes the waiting run, is last.

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import {
  api,
  audit,
  baseURL,
  checkPage,
  close,
  eventually,
  fixture,
  launch,
  runPath,
  settle,
  statusLabel,
  text,
  withPage,
  generous,
} from './helpers.mjs'

const ns = fixture.namespace
const runs = fixture.runs
const timeout = generous(90_000)

before(launch)
after(close)

// ---- /: leads to the overview of the default namespace --------------------

test('/ leads to the overview of the default namespace', { timeout }, async () => {
  await withPage('/', async (page) => {
    await page.waitForURL('**/namespaces/default/overview')
    assert.equal(await text(page.locator('main h1')), 'Overview')
  })
})

// ---- runs page ------------------------------------------------------------

test('runs page lists the runs and counts them by status', { timeout }, async () => {
  await checkPage({
    name: 'runs',
    path: `/namespaces/${ns}/runs`,
    async check(page) {
      assert.equal(await text(page.locator('main h1')), 'Runs')
      // Each run of the fixture is a row: its id linking to its page, its
      // run id, type and status.
      for (const run of Object.values(runs)) {
        const link = page.getByRole('link', { name: run.workflow_id, exact: true })
        await link.waitFor()
        const row = page.locator('tbody tr').filter({ has: link })
        const cells = await row.locator('td').allInnerTexts()
        assert.ok(cells[0].includes(run.run_id), `row of ${run.workflow_id} shows its run id: ${cells[0]}`)
        assert.equal(cells[1].trim(), run.type, `type of ${run.workflow_id}`)
        assert.equal(cells[2].trim(), statusLabel(run.status), `status of ${run.workflow_id}`)
        assert.equal(await link.getAttribute('href'), runPath(run), `link of ${run.workflow_id}`)
      }
      // The status chips: each count is the API's, All is their sum, and
      // they agree with the runs the Go test made.
      const chips = page.getByRole('navigation', { name: 'Runs by status' }).locator('li a')
      const shown = await eventually(async () => {
        const got = await chips.evaluateAll((as) =>
          as.map((a) => [a.firstChild?.textContent?.trim(), a.querySelector('.chip-count')?.textContent?.trim()]),
        )
        assert.ok(
          got.length > 1 && got.every(([, n]) => n && n !== '…'),
          `chips still counting: ${JSON.stringify(got)}`,
        )
        return Object.fromEntries(got.map(([label, n]) => [label, Number(n.replaceAll(',', ''))]))
      })
      let total = 0
      for (const [label, n] of Object.entries(shown)) {
        if (label === 'All') continue
        const status = label.toLowerCase().replaceAll(' ', '_')
        const { count } = await api('POST', `/namespaces/${ns}/workflow-count`, { statuses: [status] })
        assert.equal(n, count, `chip ${label}: the page shows ${n}, the API counts ${count}`)
        assert.equal(n, fixture.counts[status] ?? 0, `chip ${label}: the Go test made ${fixture.counts[status] ?? 0}`)
        total += n
      }
      assert.equal(shown.All, total, 'the All chip is the sum of the others')
      assert.equal(total, Object.keys(runs).length, 'every run is counted once')
    },
  })
})

test('runs page filters by status', { timeout }, async () => {
  const t = runs.terminated
  await checkPage({
    name: 'runs-terminated',
    path: `/namespaces/${ns}/runs`,
    async check(page) {
      await page
        .getByRole('navigation', { name: 'Runs by status' })
        .getByRole('link', { name: /^Terminated/ })
        .click()
      await page.waitForURL(/status=terminated/)
      await eventually(async () => {
        const ids = await page.locator('tbody tr td:first-child a').allInnerTexts()
        assert.deepEqual(ids, [t.workflow_id])
      })
    },
  })
})

test('runs page filters by the start of a workflow id', { timeout }, async () => {
  const want = Object.values(runs)
    .filter((r) => r.workflow_id.startsWith('order-'))
    .sort((a, b) => (a.workflow_id < b.workflow_id ? -1 : 1))
    .map((r) => r.workflow_id)
  assert.ok(
    want.length > 1 && want.length < Object.keys(runs).length,
    `the fixture has order-* runs and others: ${want}`,
  )
  await checkPage({
    name: 'runs-prefix',
    path: `/namespaces/${ns}/runs`,
    async check(page) {
      const form = page.getByRole('form', { name: 'Filter runs' })
      await form.getByLabel('Workflow ID').fill('order-')
      await form.getByRole('button', { name: 'Apply' }).click()
      await page.waitForURL(/id=order-/)
      await eventually(async () => {
        const ids = await page.locator('tbody tr td:first-child a').allInnerTexts()
        assert.deepEqual(ids.sort(), want)
      })
      // The status chips count within the filter: All is the runs listed.
      await eventually(async () => {
        const all = await page
          .getByRole('navigation', { name: 'Runs by status' })
          .getByRole('link', { name: /^All/ })
          .locator('.chip-count')
          .innerText()
        assert.equal(Number(all.replaceAll(',', '')), want.length)
      })
    },
  })
})

// ---- run page -------------------------------------------------------------

/** The JSON value a payload card (Input, Result) shows, by its heading. */
function card(page, heading) {
  return page
    .locator('section.card')
    .filter({ has: page.getByRole('heading', { level: 2, name: heading, exact: true }) })
}

/** Checks the summary: the title, status badge and run id. */
async function checkSummary(page, run, status = run.status) {
  assert.equal(await text(page.locator('main h1')), run.workflow_id)
  await eventually(async () =>
    assert.equal(await text(page.locator('.page-header .badge')), statusLabel(status), 'status badge'),
  )
  const summary = card(page, 'Summary')
  assert.ok((await text(summary)).includes(run.run_id), 'the summary shows the run id')
  assert.ok((await text(summary)).includes(run.type), 'the summary shows the type')
}

/** Checks that a payload card shows value as JSON. */
async function checkJSON(page, heading, value) {
  const json = card(page, heading).locator('.json')
  await json.first().waitFor()
  // A scalar is one line, after the Copy button.
  const shown = (await json.first().innerText())
    .replace(/^Copy\s*/, '')
    .replace(/\s+/g, ' ')
    .trim()
  assert.equal(shown, JSON.stringify(value), `${heading} shows ${JSON.stringify(value)}`)
}

/**
 * Checks the history: the page lists the API's events, in order, with
 * their types.
 */
async function checkHistory(page, run) {
  const events = await apiHistory(run)
  const items = page.locator('ol.timeline > li')
  // Both at once, eventually: a page that moved to another run (a reset's)
  // may show the old run's events a moment, as many as the new one has.
  await eventually(async () => {
    assert.equal(await items.count(), events.length, 'one item per event')
    const types = await page.locator('ol.timeline .event-type').allInnerTexts()
    assert.deepEqual(
      types,
      events.map((e) => e.type),
      'the events in order',
    )
  })
  assert.ok(
    (await text(card(page, 'History'))).includes(`${events.length} events`),
    'the history says how many events it has',
  )
  return events
}

async function apiHistory(run) {
  const page = await api(
    'GET',
    `/namespaces/${ns}/workflows/${encodeURIComponent(run.workflow_id)}/history?run_id=${run.run_id}`,
  )
  return page.events
}

/**
 * Checks the Gantt chart: drawn (its canvas has pixels of the color of
 * completed bars) and its table fallback listing each step.
 */
async function checkGantt(page, run) {
  const timeline = card(page, 'Timeline')
  const chart = timeline.getByRole('img', { name: /^Timeline of/ })
  await chart.locator('canvas').first().waitFor()
  await settle(page)
  const bars = await eventually(async () => {
    const n = await chart
      .locator('canvas')
      .first()
      .evaluate((canvas) => {
        const hex = getComputedStyle(document.documentElement).getPropertyValue('--ok').trim()
        const want = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16))
        const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height)
        let hits = 0
        for (let i = 0; i < data.length; i += 4) {
          if (data[i + 3] > 200 && want.every((c, j) => Math.abs(data[i + j] - c) <= 12)) hits++
        }
        return hits
      })
    assert.ok(n > 20, `the chart has ${n} pixels of completed bars`)
    return n
  })
  assert.ok(bars > 0)
  // The same bars as a table, for those who cannot see the chart.
  await timeline.getByText('The bars as a table').click()
  const rows = timeline.locator('details.bars-table tbody tr')
  await rows.first().waitFor()
  const labels = await rows.locator('td:first-child').allInnerTexts()
  for (const step of run.steps) {
    assert.ok(
      labels.some((l) => l.startsWith(`${step} #`)),
      `the bars table lists step ${step}: ${labels.join(', ')}`,
    )
  }
  const completedSteps = await rows.filter({ hasText: 'Completed' }).count()
  assert.equal(completedSteps, run.steps.length, 'a completed bar per step')
  if (run.timers) {
    assert.equal(labels.filter((l) => l.startsWith('timer #')).length, run.timers, 'the timers')
  }
}

/** Opens the bars table before each audit, so that axe sees it too. */
async function openBarsTable(page) {
  const details = page.locator('details.bars-table')
  if ((await details.count()) && !(await details.evaluate((d) => d.open))) {
    await details.locator('summary').click()
  }
}

/** Checks a completed run's page: summary, input, result, Gantt and history (returned). */
async function checkCompletedRun(page, run) {
  await checkSummary(page, run)
  await checkJSON(page, 'Input', run.input)
  await checkJSON(page, 'Result', run.result)
  await checkGantt(page, run)
  return checkHistory(page, run)
}

test('run page of a completed run: input, result, Gantt chart and history', { timeout }, async () => {
  const run = runs.completed
  await checkPage({
    name: 'run-completed',
    path: runPath(run),
    prepare: openBarsTable,
    async check(page) {
      const events = await checkCompletedRun(page, run)
      assert.equal(events.at(-1).type, 'WorkflowCompleted')
      // A closed run takes no signal, cancel or terminate.
      for (const name of ['Signal…', 'Cancel…', 'Terminate…']) {
        assert.ok(await page.getByRole('button', { name, exact: true }).isDisabled(), `${name} is disabled`)
      }
    },
  })
})

test('run page of a run of several steps and a timer', { timeout }, async () => {
  const run = runs.multistep
  await checkPage({
    name: 'run-multistep',
    path: runPath(run),
    prepare: openBarsTable,
    async check(page) {
      await checkCompletedRun(page, run)
      // The signal it received ("go") is marked on the timeline with its
      // name: in the chart's description and in its table.
      const timeline = card(page, 'Timeline')
      const chart = timeline.getByRole('img', { name: /^Timeline of/ })
      assert.match(await chart.getAttribute('aria-label'), /1 signal \(go\)/)
      const signals = timeline.locator('details.bars-table tbody tr').filter({ hasText: /^Signals/ })
      assert.deepEqual(
        (await signals.locator('td:nth-child(2)').allInnerTexts()).map((t) => t.trim()),
        ['go'],
        'the bars table lists the signal by name',
      )
    },
  })
})

test('run page of a terminated run: the reason', { timeout }, async () => {
  const run = runs.terminated
  await checkPage({
    name: 'run-terminated',
    path: runPath(run),
    async check(page) {
      await checkSummary(page, run)
      await checkJSON(page, 'Input', run.input)
      const result = await text(card(page, 'Result'))
      assert.ok(result.includes(`Terminated: ${run.reason}`), `the result says why: ${result}`)
      const events = await checkHistory(page, run)
      assert.equal(events.at(-1).type, 'WorkflowTerminated')
    },
  })
})

test('run page of a missing run says so', { timeout }, async () => {
  const run = { ...runs.completed, run_id: '00000000-0000-7000-8000-000000000000' }
  await withPage(
    runPath(run),
    async (page) => {
      await page.getByText(`No run ${run.run_id}`).waitFor()
    },
    // The browser logs the API's answer, 404, as an error: expected here.
    {
      expectedFailures: [
        {
          method: 'GET',
          path: `/api/v1/namespaces/${ns}/workflows/${encodeURIComponent(run.workflow_id)}`,
          status: 404,
        },
      ],
    },
  )
})

test('a path that names no page: Page not found', { timeout }, async () => {
  await checkPage({
    name: 'not-found',
    path: '/no/such/page',
    async check(page) {
      assert.equal(await text(page.locator('main h1')), 'Page not found')
      await page.getByRole('link', { name: 'Go to the runs' }).waitFor()
    },
  })
})

// ---- namespaces page ------------------------------------------------------

test('namespaces page lists the namespaces and creates one', { timeout }, async () => {
  const made = { name: 'made-in-browser', description: 'made by the browser test', days: 2 }
  await checkPage({
    name: 'namespaces',
    path: '/namespaces',
    async check(page) {
      assert.equal(await text(page.locator('main h1')), 'Namespaces')
      // One row per namespace the API lists, each linking to its runs.
      const { namespaces } = await api('GET', '/namespaces')
      const rows = page.locator('main tbody tr')
      await eventually(async () => assert.equal(await rows.count(), namespaces.length, 'a row per namespace'))
      for (const ns of namespaces) {
        const link = page.getByRole('link', { name: `${ns.name} runs`, exact: true })
        assert.equal(await link.getAttribute('href'), `/namespaces/${ns.name}/runs`, `link of ${ns.name}`)
      }
      // The one the Go test made, with its description and retention.
      for (const want of fixture.namespaces) {
        const row = rows.filter({ has: page.getByRole('link', { name: `${want.name} runs`, exact: true }) })
        const cells = (await row.locator('td').allInnerTexts()).map((c) => c.trim())
        assert.equal(cells[1], want.description, `description of ${want.name}`)
        assert.equal(cells[2], want.retention, `retention of ${want.name}`)
      }

      // A new one, from the dialog.
      await page.getByRole('button', { name: 'New namespace…' }).click()
      const dialog = page.getByRole('dialog', { name: 'New namespace' })
      await dialog.waitFor()
      await dialog.getByLabel('Name', { exact: true }).fill(made.name)
      await dialog.getByLabel('Description (optional)').fill(made.description)
      await dialog.getByLabel('Keep closed runs for').fill(String(made.days))
      await dialog.getByLabel('Unit').selectOption('days')
      await audit(page, 'namespaces-new-dialog')
      await dialog.getByRole('button', { name: 'Create namespace' }).click()
      await dialog.waitFor({ state: 'detached' })
      await page
        .getByRole('status')
        .filter({ hasText: `Namespace ${made.name} created.` })
        .waitFor()
      const row = rows.filter({ has: page.getByRole('link', { name: `${made.name} runs`, exact: true }) })
      await row.waitFor()
      assert.equal((await row.locator('td').nth(2).innerText()).trim(), `${made.days}d`)
      const got = await api('GET', `/namespaces/${made.name}`)
      assert.equal(got.description, made.description, 'the API has the new namespace')
      assert.equal(got.retention, made.days * 24 * 3600 * 1e9, 'with its retention')
    },
  })
})

// ---- cluster page ---------------------------------------------------------

test('cluster page shows the node and its shards', { timeout }, async () => {
  await checkPage({
    name: 'cluster',
    path: '/cluster',
    async check(page) {
      assert.equal(await text(page.locator('main h1')), 'Cluster')
      const { nodes } = await api('GET', '/nodes?all=true')
      const { shards } = await api('GET', '/shards')
      const nodesCard = card(page, 'Nodes')
      const nodeRows = nodesCard.locator('tbody tr')
      await eventually(async () => assert.equal(await nodeRows.count(), nodes.length, 'a row per node'))
      // The server the Go test started, live, answering, with its address.
      const row = nodeRows.filter({ hasText: fixture.node })
      const cells = (await row.locator('td').allInnerTexts()).map((c) => c.replace(/\s+/g, ' ').trim())
      assert.ok(cells[0].startsWith(fixture.node), `the node: ${cells[0]}`)
      assert.ok(cells[0].includes('this node'), 'the node that answered is flagged')
      assert.equal(cells[1], nodes.find((n) => n.id === fixture.node)?.address, 'its address')
      assert.equal(cells[3], 'Live', 'its status')
      assert.equal(Number(cells[7]), shards.filter((s) => s.owner === fixture.node).length, 'the shards it owns')
      // Every shard, with its owner.
      const shardRows = card(page, 'Shards').locator('tbody tr')
      assert.equal(await shardRows.count(), shards.length, 'a row per shard')
      for (const [i, s] of shards.entries()) {
        const c = (await shardRows.nth(i).locator('td').allInnerTexts()).map((x) => x.trim())
        assert.deepEqual([Number(c[0]), c[1]], [s.id, s.owner], `shard ${s.id}`)
      }
      const summary = await text(card(page, 'Summary'))
      assert.ok(summary.includes(`Live nodes ${nodes.length} of ${nodes.length} known`), `summary: ${summary}`)
    },
  })
})

// ---- audit log page ---------------------------------------------------------

test('audit log page: without access control everyone reads it, as anonymous', { timeout }, async () => {
  // A change the server refuses (there is no such run): it changes
  // nothing, and the audit log records it.
  const id = `no-such-run-${Date.now().toString(36)}`
  const res = await fetch(`${baseURL}/api/v1/namespaces/${ns}/workflows/${id}/terminate`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ reason: 'audited' }),
  })
  assert.equal(res.status, 404, `terminate ${id}: ${await res.text()}`)
  await checkPage({
    name: 'audit-open',
    path: '/audit',
    async check(page) {
      assert.equal(await text(page.locator('main h1')), 'Audit log')
      const link = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' })
      assert.equal(await link.getAttribute('aria-current'), 'page', 'the navigation offers and marks the page')
      const row = page.locator('main tbody tr[data-entry]').filter({ hasText: id })
      await eventually(async () => assert.equal(await row.count(), 1, 'the refused terminate is listed'), 30_000)
      assert.equal(await row.getAttribute('data-actor'), 'anonymous')
      assert.equal(await row.getAttribute('data-status'), '404')
      assert.match((await row.locator('.badge').getAttribute('class')) ?? '', /\bhttp-refused\b/)
      // What the call sent, in its detail.
      await row.getByRole('button', { name: 'Show the detail' }).click()
      await page.locator('tr.audit-detail').filter({ hasText: '"reason": "audited"' }).waitFor()
    },
  })
})

// ---- queues page ------------------------------------------------------------

test('queues page lists the queues and the worker polling them', { timeout }, async () => {
  await checkPage({
    name: 'queues',
    path: `/namespaces/${ns}/queues`,
    async check(page) {
      assert.equal(await text(page.locator('main h1')), 'Queues')
      const table = page.locator('table.queues-table')
      await table.getByRole('cell', { name: 'default', exact: true }).waitFor()
      const queues = (await api('GET', `/namespaces/${ns}/queues`)).queues
      // The fixture's worker polls default, and statemachines for its state
      // machine; the server's own worker (schedules, batches) strand.system.
      assert.deepEqual(queues.map((q) => `${q.name}/${q.kind}`).sort(), [
        'default/step',
        'default/workflow',
        'statemachines/step',
        'statemachines/workflow',
        'strand.system/step',
        'strand.system/workflow',
      ])
      const shown = await text(table)
      for (const want of ['Workflow', 'Step', fixture.worker, fixture.node]) {
        assert.ok(shown.includes(want), `the queues table shows ${want}: ${shown}`)
      }
      // The worker's row of each of its queues and kinds says it polls now.
      const rows = table.locator('tbody tr').filter({ hasText: fixture.worker })
      assert.equal(await rows.count(), 4, 'a row of the worker per queue and kind')
    },
  })
})

// ---- overview page ----------------------------------------------------------

test('overview page counts the last hour as the API does', { timeout }, async () => {
  await checkPage({
    name: 'overview',
    path: `/namespaces/${ns}/overview`,
    async check(page) {
      assert.equal(await text(page.locator('main h1')), 'Overview')
      const o = await api('GET', `/namespaces/${ns}/overview`)
      const sum = (k) => o.minutes.reduce((n, m) => n + m[k], 0)
      // The fixture's runs: four started, two completed, one terminated.
      assert.deepEqual([sum('started'), sum('completed'), sum('terminated')], [4, 2, 1], 'the API counts the fixture')
      const totals = card(page, 'Last hour')
      await totals.locator('dd').first().waitFor()
      const facts = Object.fromEntries(
        await totals
          .locator('dl > div')
          .evaluateAll((divs) =>
            divs.map((d) => [d.querySelector('dt').innerText.trim(), d.querySelector('dd').innerText.trim()]),
          ),
      )
      assert.deepEqual(
        [facts.Started, facts.Completed, facts.Terminated],
        ['4', '2', '1'],
        `totals: ${JSON.stringify(facts)}`,
      )
      // The slowest types are the fixture's, each linking to its runs.
      const slowest = card(page, 'Slowest workflow types')
      for (const type of ['Approval', 'Chores']) {
        const link = slowest.getByRole('link', { name: `${type} runs` })
        await link.waitFor()
        assert.ok((await link.getAttribute('href')).includes(`type=${type}`), `${type} links to its runs`)
      }
      // The chart is drawn and has its table.
      await page.locator('canvas').first().waitFor()
      await page.getByText('The minutes as a table').waitFor()
    },
  })
})

// ---- schedules, run operations and batches --------------------------------
//
// These add runs (and the runs that carry schedules and batches), so they
// come after the tests that count runs. Each makes the runs it acts on.

/** The path of a schedule's page. */
function schedulePath(id) {
  return `/namespaces/${ns}/schedules/${encodeURIComponent(id)}`
}

/** The status of a GET of the API (for what should not be there: 404). */
async function apiStatus(path) {
  const res = await fetch(`${baseURL}/api/v1${path}`)
  await res.text()
  return res.status
}

/** Starts an Approval run with the API and waits until it waits for its signal (its first task done). */
async function startApproval(workflowId, input) {
  const { run_id } = await api('POST', `/namespaces/${ns}/workflows`, {
    workflow_id: workflowId,
    workflow_type: 'Approval',
    input,
  })
  const run = { workflow_id: workflowId, run_id, type: 'Approval', input }
  await eventually(async () => {
    const events = await apiHistory(run)
    assert.ok(
      events.some((e) => e.type === 'WorkflowTaskCompleted'),
      `${workflowId} has run its first task`,
    )
  }, 20_000)
  return run
}

/** The run id of the page open now (the last segment of its path). */
function pageRunId(page) {
  return decodeURIComponent(new URL(page.url()).pathname.split('/').at(-1))
}

test(
  'schedules page: empty, then a schedule created with the form; a bad cron expression is refused',
  { timeout },
  async () => {
    const made = { id: 'nightly-report', cron: ['0 2 * * *', '30 14 * * 1-5'], zone: 'Europe/Berlin', type: 'Nightly' }
    const createPath = `/api/v1/namespaces/${ns}/schedules`
    await withPage(
      `/namespaces/${ns}/schedules`,
      async (page) => {
        assert.equal(await text(page.locator('main h1')), 'Schedules')
        // None yet: the page says so, and what a schedule is.
        await page.getByText('No schedules in this namespace.').waitFor()
        assert.equal(
          await page
            .getByRole('navigation', { name: 'Main' })
            .getByRole('link', { name: 'Schedules' })
            .getAttribute('aria-current'),
          'page',
          'the navigation marks the page',
        )
        await audit(page, 'schedules-empty')

        await page.getByRole('button', { name: 'Create schedule…' }).click()
        const dialog = page.getByRole('dialog', { name: 'New schedule' })
        await dialog.waitFor()
        await dialog.getByLabel('Schedule ID').fill(made.id)
        await dialog.getByLabel('Cron expressions').fill('61 * * * *')
        await dialog.getByLabel('Workflow type').fill(made.type)
        await dialog.getByRole('button', { name: 'Create schedule' }).click()
        // The API refuses the expression: the error shows under the field, which is marked invalid.
        const cron = dialog.getByLabel('Cron expressions')
        const refusal = dialog.getByRole('alert').filter({ hasText: 'schedule.spec.cron[0]' })
        await refusal.waitFor()
        assert.ok((await text(refusal)).includes('invalid_argument'), `the refusal: ${await text(refusal)}`)
        assert.equal(await cron.getAttribute('aria-invalid'), 'true', 'the cron field is marked invalid')
        const describedBy = (await cron.getAttribute('aria-describedby')).split(' ')
        assert.ok(
          await refusal.evaluate((el, ids) => ids.some((id) => document.getElementById(id)?.contains(el)), describedBy),
          'the error describes the cron field',
        )
        assert.equal(await apiStatus(`/namespaces/${ns}/schedules/${made.id}`), 404, 'no schedule was created')
        await audit(page, 'schedules-new-dialog-error')

        // Valid: the schedule is created and listed.
        await cron.fill(made.cron.join('\n'))
        await dialog.getByLabel('Time zone').fill(made.zone)
        await dialog.getByLabel('While a run is open').selectOption('buffer_one')
        await dialog.getByLabel('Catch-up window').fill('30m')
        await dialog.getByLabel('After downtime').selectOption('all')
        await dialog.getByRole('button', { name: 'Create schedule' }).click()
        await dialog.waitFor({ state: 'detached' })
        await page
          .getByRole('status')
          .filter({ hasText: `Schedule ${made.id} created.` })
          .waitFor()
        // The row of the schedule (the status line links to it too).
        const row = page.locator('tbody tr').filter({ has: page.getByRole('link', { name: made.id, exact: true }) })
        await row.waitFor()
        assert.equal(await row.getByRole('link').getAttribute('href'), schedulePath(made.id))
        const cells = (await row.locator('td').allInnerTexts()).map((c) => c.replace(/\s+/g, ' ').trim())
        assert.equal(cells[1], made.type, 'the workflow type')
        assert.equal(cells[2], `${made.cron.join(' ')} ${made.zone}`, 'the calendar')
        assert.equal(cells[3], 'Active', 'the state')
        // In the schedule's own zone, named.
        assert.match(cells[4], /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (\S+) \(in .+\)$/, 'the next fire')
        assert.equal(/ (\S+) \(in /.exec(cells[4])[1], made.zone, 'the next fire in the schedule’s zone')
        const got = await api('GET', `/namespaces/${ns}/schedules/${made.id}`)
        assert.deepEqual(got.schedule.spec, { cron: made.cron, time_zone: made.zone }, 'the API has its spec')
        assert.deepEqual(got.schedule.policies, { overlap: 'buffer_one', catchup_window: 30 * 60e9, catchup: 'all' }, 'and policies')
        await audit(page, 'schedules')
      },
      // The refusal of the bad expression, 400, is logged by the browser as an error: expected here.
      { expectedFailures: [{ method: 'POST', path: createPath, status: 400 }] },
    )
  },
)

test('schedule page: next fires, trigger, backfill, pause, edit and delete', { timeout: generous(150_000) }, async () => {
  const id = 'daily-export'
  await api('POST', `/namespaces/${ns}/schedules`, {
    schedule_id: id,
    schedule: { spec: { cron: ['0 2 * * *'] }, action: { workflow_type: 'Nightly' } },
  })
  await withPage(schedulePath(id), async (page) => {
    assert.equal(await text(page.locator('main h1')), id)
    await page.locator('.page-header .badge', { hasText: 'Active' }).waitFor()
    // The next 10 fire times, as the API computes them.
    const d = await api('GET', `/namespaces/${ns}/schedules/${id}`)
    const fires = card(page, 'Next fire times').locator('li time')
    await eventually(async () => assert.equal(await fires.count(), 10, 'ten fire times'))
    const shown = await fires.evaluateAll((ts) => ts.map((t) => t.getAttribute('datetime')))
    assert.deepEqual(
      shown,
      d.next_fires.map((t) => new Date(t).toISOString()),
      'the fire times are the API’s',
    )
    assert.ok((await text(card(page, 'Schedule'))).includes('0 2 * * *'), 'the calendar')

    // Trigger now: a run starts, and the recent actions link to it.
    await page.getByRole('button', { name: 'Trigger now' }).click()
    await page
      .getByRole('status')
      .filter({ hasText: /^Triggered at/ })
      .waitFor()
    const recent = card(page, 'Recent actions').locator('tbody tr')
    const triggered = recent.filter({ hasText: 'Trigger' })
    await triggered.waitFor()
    const runLink = triggered.getByRole('link')
    const { recent: actions } = await api('GET', `/namespaces/${ns}/schedules/${id}`)
    const t = actions.find((a) => a.kind === 'trigger')
    assert.ok(t?.run_id, 'the API lists the trigger with its run')
    assert.equal(await runLink.innerText(), t.workflow_id)
    assert.equal(await runLink.getAttribute('href'), runPath(t), 'the link opens its run')
    await eventually(async () => assert.equal(await text(triggered.locator('.badge')), 'Completed'), 20_000)

    // Backfill the three days before today: a run for each 02:00.
    const today = new Date()
    today.setUTCHours(0, 0, 0, 0)
    const day = (n) => new Date(today.getTime() - n * 86_400_000).toISOString().slice(0, 10)
    await page.getByRole('button', { name: 'Backfill…' }).click()
    const backfill = page.getByRole('dialog', { name: 'Backfill' })
    await backfill.waitFor()
    // The browser runs in UTC: local times are UTC.
    await backfill.getByLabel('Start').fill(`${day(3)}T00:00`)
    await backfill.getByLabel('End').fill(`${day(0)}T00:00`)
    await backfill.getByLabel('Parallelism').fill('2')
    await audit(page, 'schedule-backfill-dialog')
    await backfill.getByRole('button', { name: 'Start backfill' }).click()
    await backfill.waitFor({ state: 'detached' })
    const counts = card(page, 'Actions taken')
    await eventually(async () => assert.ok((await text(counts)).includes('Backfilled 3'), await text(counts)), 20_000)
    const backfilled = recent.filter({ hasText: 'Backfill' })
    await eventually(async () => assert.equal(await backfilled.count(), 3, 'three backfilled runs'))
    for (const n of [1, 2, 3]) {
      const wf = `${id}-${day(n)}T02:00:00Z`
      const row = backfilled.filter({ has: page.getByRole('link', { name: wf, exact: true }) })
      await row.waitFor()
      await eventually(async () => assert.equal(await text(row.locator('.badge')), 'Completed'), 20_000)
      const r = await api('GET', `/namespaces/${ns}/workflows/${encodeURIComponent(wf)}/result`)
      assert.equal(r.output, `processed ${day(n)}`, `${wf} processed its day`)
    }

    // Pause with a note: the state, the note and who paused it; no next fire times.
    const note = 'holiday freeze'
    await page.getByRole('button', { name: 'Pause…' }).click()
    const pause = page.getByRole('dialog', { name: 'Pause the schedule' })
    await pause.getByLabel('Note (optional)').fill(note)
    await pause.getByRole('button', { name: 'Pause schedule' }).click()
    await pause.waitFor({ state: 'detached' })
    await page.locator('.page-header .badge', { hasText: 'Paused' }).waitFor()
    const notice = page.locator('main .notice').filter({ hasText: 'Paused by strand-console at' })
    await notice.waitFor()
    assert.ok((await text(notice)).includes(`: ${note}.`), `the notice has the note: ${await text(notice)}`)
    await card(page, 'Next fire times').getByText('None while the schedule is paused.').waitFor()
    const paused = await api('GET', `/namespaces/${ns}/schedules/${id}`)
    assert.deepEqual([paused.schedule.paused, paused.schedule.note, paused.paused_by], [true, note, 'strand-console'])
    await audit(page, 'schedule-paused')
    await page.getByRole('button', { name: 'Unpause…' }).click()
    const unpause = page.getByRole('dialog', { name: 'Unpause the schedule' })
    await unpause.getByRole('button', { name: 'Unpause schedule' }).click()
    await unpause.waitFor({ state: 'detached' })
    await page.locator('.page-header .badge', { hasText: 'Active' }).waitFor()
    await eventually(async () => assert.equal(await fires.count(), 10, 'fire times again'))

    // Edit: the form opens with the schedule; a new calendar is saved.
    await page.getByRole('button', { name: 'Edit…' }).click()
    const edit = page.getByRole('dialog', { name: `Edit schedule ${id}` })
    await edit.waitFor()
    assert.equal(await edit.getByLabel('Cron expressions').inputValue(), '0 2 * * *')
    assert.equal(await edit.getByLabel('Workflow type').inputValue(), 'Nightly')
    await edit.getByLabel('Cron expressions').fill('0 3 * * *')
    await audit(page, 'schedule-edit-dialog')
    await edit.getByRole('button', { name: 'Save changes' }).click()
    await edit.waitFor({ state: 'detached' })
    await eventually(async () => assert.ok((await text(card(page, 'Schedule'))).includes('0 3 * * *')))
    const edited = await api('GET', `/namespaces/${ns}/schedules/${id}`)
    assert.deepEqual(edited.schedule.spec.cron, ['0 3 * * *'], 'the API has the new calendar')
    assert.ok(
      edited.next_fires.every((f) => f.includes('T03:00:00')),
      'its fires are at 03:00',
    )
    await audit(page, 'schedule')

    // Delete: confirmed, then back to the list, where it is gone.
    await page.getByRole('button', { name: 'Delete…' }).click()
    const del = page.getByRole('dialog', { name: 'Delete the schedule' })
    await del.getByRole('button', { name: 'Delete schedule' }).click()
    await page.waitForURL((url) => url.pathname === `/namespaces/${ns}/schedules`)
    assert.equal(await apiStatus(`/namespaces/${ns}/schedules/${id}`), 404, 'the API has no schedule')
    await eventually(async () =>
      assert.equal(await page.getByRole('link', { name: id, exact: true }).count(), 0, 'the list has it no more'),
    )
  })
})

test('run page: audit details under their events, a large one loaded on demand', { timeout }, async () => {
  // Invoice (the test worker) attaches a plan from its workflow code; its
  // Render step attaches its request and a log of about 300 KiB, which the
  // store keeps as a document.
  const workflowId = 'invoice-acme'
  const { run_id } = await api('POST', `/namespaces/${ns}/workflows`, {
    workflow_id: workflowId,
    workflow_type: 'Invoice',
    input: 'acme',
  })
  const run = { workflow_id: workflowId, run_id, type: 'Invoice', input: 'acme' }
  const events = await eventually(async () => {
    const events = await apiHistory(run)
    assert.equal(events.at(-1)?.type, 'WorkflowCompleted', `${workflowId} has completed`)
    return events
  }, 20_000)
  const rendered = events.find((e) => e.type === 'StepCompleted')
  const log = rendered.details.find((d) => d.name === 'log')
  assert.ok(log.value.$document, 'the API keeps the log as a document reference')
  await checkPage({
    name: 'run-audit-details',
    path: runPath(run),
    async check(page) {
      await checkHistory(page, run)
      const item = page.locator('ol.timeline > li').nth(events.indexOf(rendered))
      assert.equal(await text(item.locator('summary .tag')), '2 audit details')
      const planned = page.locator('ol.timeline > li').nth(events.findIndex((e) => e.details))
      assert.equal(await text(planned.locator('summary .tag')), '1 audit detail')
      await item.locator('summary').first().click()
      const block = item.locator('.detail-block').filter({ has: page.getByRole('heading', { name: 'Audit details' }) })
      await block.waitFor()
      assert.deepEqual(await block.locator('h4').allInnerTexts(), ['request', 'log'])
      assert.ok((await text(block)).includes('"129.00 EUR"'), 'the request is shown as JSON')
      // The log is not loaded until asked for.
      assert.ok((await text(block)).includes('stored apart'), 'the log is a document')
      assert.equal(await block.locator('pre.payload-text').count(), 0)
      await block.getByRole('button', { name: 'Load the document' }).click()
      const shown = block.locator('pre.payload-text')
      await shown.waitFor()
      const logText = await shown.innerText()
      assert.ok(logText.startsWith('page 1 of the invoice for acme rendered\n'), logText.slice(0, 80))
      assert.ok(logText.includes('page 7000 of the invoice for acme rendered'), 'the whole log')
    },
  })
})

test('run page: pause shows who paused the run, resume clears it', { timeout }, async () => {
  const run = await startApproval('ops-pause', 'lamp')
  const reason = 'checking the lamp'
  await withPage(runPath(run), async (page) => {
    await checkSummary(page, { ...run, status: 'running' })
    await page.getByRole('button', { name: 'Pause…', exact: true }).click()
    const dialog = page.getByRole('dialog', { name: 'Pause the run' })
    await dialog.getByLabel('Reason (optional)').fill(reason)
    await dialog.getByRole('button', { name: 'Pause run' }).click()
    await dialog.waitFor({ state: 'detached' })
    const notice = card(page, 'Summary').locator('.notice')
    await notice.waitFor()
    const said = await text(notice)
    assert.match(said, /^Paused by strand-console at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: checking the lamp\./, said)
    const d = await api('GET', `/namespaces/${ns}/workflows/${run.workflow_id}`)
    assert.deepEqual([d.paused?.identity, d.paused?.reason], ['strand-console', reason], 'the API has it paused')
    await audit(page, 'run-paused')

    await page.getByRole('button', { name: 'Resume…', exact: true }).click()
    const resume = page.getByRole('dialog', { name: 'Resume the run' })
    await resume.getByRole('button', { name: 'Resume run' }).click()
    await resume.waitFor({ state: 'detached' })
    await notice.waitFor({ state: 'detached' })
    await page.getByRole('button', { name: 'Pause…', exact: true }).waitFor()
    const after = await api('GET', `/namespaces/${ns}/workflows/${run.workflow_id}`)
    assert.equal(after.paused, undefined, 'the API has it resumed')
    const events = await checkHistory(page, run)
    assert.deepEqual(
      events.filter((e) => e.type.startsWith('WorkflowPa') || e.type === 'WorkflowResumed').map((e) => e.type),
      ['WorkflowPaused', 'WorkflowResumed'],
    )
  })
})

test(
  'run page: reset to a point the run lacks is refused; to its last task opens the new run',
  { timeout },
  async () => {
    const run = await startApproval('ops-reset', 'stool')
    const resetPath = `/api/v1/namespaces/${ns}/workflows/${run.workflow_id}/reset`
    await withPage(
      runPath(run),
      async (page) => {
        await checkSummary(page, { ...run, status: 'running' })
        await page.getByRole('button', { name: 'Reset…', exact: true }).click()
        const dialog = page.getByRole('dialog', { name: 'Reset the run' })
        await dialog.waitFor()
        assert.ok(
          await dialog.getByLabel('Re-apply signals received after the point').isChecked(),
          'signals by default',
        )
        // The event id is asked for the point that needs it.
        await dialog.getByLabel('Reset to').selectOption('before_event')
        await dialog.getByLabel(/^Event ID/).waitFor()
        // No step failed: the API refuses, and the dialog says why.
        await dialog.getByLabel('Reset to').selectOption('first_failed_step')
        assert.equal(await dialog.getByLabel(/^Event ID/).count(), 0, 'no event id for this point')
        await dialog.getByLabel('Reason (optional)').fill('try again')
        await dialog.getByRole('button', { name: 'Reset run' }).click()
        await dialog.getByRole('alert').filter({ hasText: 'failed_precondition' }).waitFor()
        await audit(page, 'run-reset-dialog')

        await dialog.getByLabel('Reset to').selectOption('last_workflow_task')
        await dialog.getByRole('button', { name: 'Reset run' }).click()
        await dialog.waitFor({ state: 'detached' })
        await page.waitForURL(
          (url) =>
            url.pathname.startsWith(`/namespaces/${ns}/runs/${run.workflow_id}/`) && pageRunId(page) !== run.run_id,
        )
        const next = { ...run, run_id: pageRunId(page) }
        await checkSummary(page, next, 'running')
        const events = await checkHistory(page, next)
        const reset = events.find((e) => e.type === 'WorkflowReset')
        assert.deepEqual(
          [reset?.identity, reset?.reason, reset?.target?.run_id],
          ['strand-console', 'try again', run.run_id],
          'the new run says it was reset from the old one',
        )
        // The summary links back to it.
        const from = card(page, 'Summary').getByRole('link', { name: run.run_id })
        assert.equal(await from.getAttribute('href'), runPath(run), 'Reset from links to the old run')
        const old = await api('GET', `/namespaces/${ns}/workflows/${run.workflow_id}?run_id=${run.run_id}`)
        assert.equal(old.status, 'terminated', 'the old run is terminated')
        await audit(page, 'run-reset')
      },
      { expectedFailures: [{ method: 'POST', path: resetPath, status: 409 }] },
    )
  },
)

test('run page: rerun of a closed run opens the new run', { timeout }, async () => {
  const run = await startApproval('ops-rerun', 'lamp')
  await api('POST', `/namespaces/${ns}/workflows/${run.workflow_id}/signals`, { name: 'approve', input: 'bob' })
  await eventually(async () => {
    const d = await api('GET', `/namespaces/${ns}/workflows/${run.workflow_id}`)
    assert.equal(d.status, 'completed')
  }, 20_000)
  await withPage(runPath(run), async (page) => {
    await checkSummary(page, { ...run, status: 'completed' })
    assert.ok(
      await page.getByRole('button', { name: 'Pause…', exact: true }).isDisabled(),
      'a closed run is not paused',
    )
    await page.getByRole('button', { name: 'Rerun…', exact: true }).click()
    const dialog = page.getByRole('dialog', { name: 'Rerun' })
    await dialog.waitFor()
    await dialog.getByRole('button', { name: 'Rerun' }).click()
    await dialog.waitFor({ state: 'detached' })
    await page.waitForURL(
      (url) => url.pathname.startsWith(`/namespaces/${ns}/runs/${run.workflow_id}/`) && pageRunId(page) !== run.run_id,
    )
    const next = { ...run, run_id: pageRunId(page) }
    // The same input; Approval waits for its signal again.
    await checkSummary(page, next, 'running')
    await checkJSON(page, 'Input', run.input)
    assert.ok(
      await page.getByRole('button', { name: 'Rerun…', exact: true }).isDisabled(),
      'a running run is not rerun',
    )
    const d = await api('GET', `/namespaces/${ns}/workflows/${run.workflow_id}`)
    assert.deepEqual([d.run_id, d.status], [next.run_id, 'running'], 'the API has the new run')
  })
})

test('runs page: a batch terminates the runs the filter matches and shows its progress', { timeout }, async () => {
  const ids = ['batch-1', 'batch-2', 'batch-3']
  const made = []
  for (const id of ids) made.push(await startApproval(id, id))
  await eventually(async () => {
    const { count } = await api('POST', `/namespaces/${ns}/workflow-count`, { workflow_id_prefix: 'batch-' })
    assert.equal(count, ids.length, 'the runs are listed')
  })
  const reason = 'cleared by a batch'
  await withPage(`/namespaces/${ns}/runs?id=batch-`, async (page) => {
    const all = page.getByRole('navigation', { name: 'Runs by status' }).getByRole('link', { name: /^All/ })
    await eventually(async () => assert.equal(await all.locator('.chip-count').innerText(), String(ids.length)))
    await page.getByRole('button', { name: 'Batch…' }).click()
    const dialog = page.getByRole('dialog', { name: 'Batch operation' })
    await dialog.waitFor()
    const said = await text(dialog.locator('.dialog-description'))
    assert.ok(said.includes('3 runs now (workflow id starting batch-)'), `the dialog counts the runs: ${said}`)
    // Signal asks for its name; terminate for a reason.
    await dialog.getByLabel('Signal name').waitFor()
    await dialog.getByLabel('Operation').selectOption('terminate')
    await dialog.getByLabel('Reason (optional)').fill(reason)
    await dialog.getByLabel('Rate (runs a second)').fill('20')
    await audit(page, 'runs-batch-dialog')
    await dialog.getByRole('button', { name: 'Terminate 3 runs' }).click()
    await dialog.waitFor({ state: 'detached' })

    // Its progress, until it completes; then the list shows the runs terminated.
    const status = page.locator('.batch-notice [role=status]')
    await eventually(
      async () => assert.match(await text(status), /^Terminate batch completed: 3 done: 3 succeeded, 0 failed\./),
      20_000,
    )
    await eventually(async () => {
      const states = await page.locator('tbody tr td:nth-child(3)').allInnerTexts()
      assert.deepEqual(
        states.map((s) => s.trim()),
        ['Terminated', 'Terminated', 'Terminated'],
      )
    })
    for (const run of made) {
      const d = await api('GET', `/namespaces/${ns}/workflows/${run.workflow_id}`)
      assert.equal(d.status, 'terminated', `${run.workflow_id} is terminated`)
    }
    await audit(page, 'runs-batch-done')

    // The batch's page: its request, its counts and a result per run.
    await status.getByRole('link', { name: 'See the batch' }).click()
    await page.waitForURL(/\/batches\/[^/]+$/)
    const batchId = decodeURIComponent(new URL(page.url()).pathname.split('/').at(-1))
    const b = await api('GET', `/namespaces/${ns}/batches/${batchId}`)
    assert.deepEqual(
      [b.request.operation, b.request.reason, b.request.rate, b.request.filter, b.request.identity],
      ['terminate', reason, 20, { workflow_id_prefix: 'batch-' }, 'strand-console'],
      'what the console asked',
    )
    assert.equal(await text(page.locator('main h1')), `Terminate batch ${batchId}`)
    await page.locator('.page-header .badge', { hasText: 'Completed' }).waitFor()
    assert.ok(
      (await text(card(page, 'Progress'))).includes('Done 3 Succeeded 3 Failed 0'),
      await text(card(page, 'Progress')),
    )
    const results = card(page, 'Results').locator('tbody tr')
    assert.equal(await results.count(), 3, 'a result per run')
    for (const run of made) {
      const link = card(page, 'Results').getByRole('link', { name: run.workflow_id, exact: true })
      assert.equal(await link.getAttribute('href'), runPath(run), `the result of ${run.workflow_id} links to it`)
    }
    await audit(page, 'batch')

    // The batches page lists it.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Batches' }).click()
    await page.waitForURL(`**/namespaces/${ns}/batches`)
    const row = page.locator('tbody tr').filter({ has: page.getByRole('link', { name: batchId }) })
    await row.waitFor()
    const cells = (await row.locator('td').allInnerTexts()).map((c) => c.trim())
    assert.deepEqual(cells.slice(0, 3), [batchId, 'Terminate', 'Completed'])
    await audit(page, 'batches')
  })
})

// ---- run page: start again (adds a running run) ---------------------------

test('run page: Start again starts a new run with the same input, or says why not', { timeout }, async () => {
  const run = runs.completed
  const again = `${run.workflow_id}-again`
  const running = runs.waiting.workflow_id
  const startPath = `/api/v1/namespaces/${ns}/workflows`
  await withPage(
    runPath(run),
    async (page) => {
      // What the console asks the API to start.
      const sent = []
      page.on('request', (r) => {
        if (r.method() === 'POST' && new URL(r.url()).pathname === startPath) sent.push(r.postDataJSON())
      })
      await checkSummary(page, run)
      await checkJSON(page, 'Input', run.input)
      await page.getByRole('button', { name: 'Start again…', exact: true }).click()
      const dialog = page.getByRole('dialog', { name: 'Start again' })
      await dialog.waitFor()
      // It names the type and shows the input it sends, under the run's id.
      const facts = await text(dialog.locator('dl'))
      assert.ok(facts.includes(`Workflow type ${run.type}`), `the dialog names the type: ${facts}`)
      const input = (await dialog.locator('.json').innerText()).replace(/^Copy\s*/, '').trim()
      assert.equal(input, JSON.stringify(run.input), 'the dialog shows the input')
      const id = dialog.getByLabel('Workflow ID')
      assert.equal(await id.inputValue(), run.workflow_id, 'the workflow id is the run’s')

      // The id of a run that still runs: the API refuses, and the dialog says why.
      await id.fill(running)
      await dialog.getByRole('button', { name: 'Start run' }).click()
      const refusal = dialog.getByRole('alert').filter({ hasText: 'already_started' })
      await refusal.waitFor()
      assert.ok((await text(refusal)).includes(running), `the refusal names ${running}: ${await text(refusal)}`)
      await audit(page, 'run-start-again-dialog')

      // A new id: the run starts, and its page opens.
      await id.fill(again)
      await dialog.getByRole('button', { name: 'Start run' }).click()
      await dialog.waitFor({ state: 'detached' })
      await page.waitForURL((url) => url.pathname.startsWith(`/namespaces/${ns}/runs/${again}/`))
      const runId = decodeURIComponent(new URL(page.url()).pathname.split('/').at(-1))
      const started = { ...run, workflow_id: again, run_id: runId }
      // Approval waits for its signal: the new run runs.
      await checkSummary(page, started, 'running')
      await checkJSON(page, 'Input', run.input)

      // The API knows it: the same type, started by the console with the same input.
      const d = await api('GET', `/namespaces/${ns}/workflows/${again}`)
      assert.deepEqual([d.run_id, d.workflow_type, d.status], [runId, run.type, 'running'], 'the API has the new run')
      const [first] = await apiHistory(started)
      assert.equal(first.type, 'WorkflowStarted')
      assert.deepEqual([first.payload, first.identity], [run.input, 'strand-console'], 'its input, from the console')
      // Both tries carried the dialog's one request id, which the run started with.
      assert.deepEqual(
        sent.map((b) => [b.workflow_id, b.workflow_type, b.input, b.queue, b.identity]),
        [
          [running, run.type, run.input, 'default', 'strand-console'],
          [again, run.type, run.input, 'default', 'strand-console'],
        ],
        'what the console sent',
      )
      assert.match(sent[0].request_id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      assert.equal(sent[1].request_id, sent[0].request_id, 'one request id per dialog')
      assert.equal(first.start?.request_id, sent[1].request_id, 'the run started with it')
      await audit(page, 'run-started-again')
    },
    // The refusal, 409, is logged by the browser as an error: expected here.
    { expectedFailures: [{ method: 'POST', path: startPath, status: 409 }] },
  )
})

// ---- run page: signal a waiting run (last: it completes the run) ----------

test('run page: a signal sent from the Signal form reaches the waiting run', { timeout }, async () => {
  const run = runs.waiting
  const value = 'grace'
  await withPage(runPath(run), async (page) => {
    await checkSummary(page, run)
    await checkJSON(page, 'Input', run.input)
    assert.ok((await text(card(page, 'Result'))).includes('Not closed yet.'))
    await checkHistory(page, run)
    await audit(page, 'run-waiting')

    await page.getByRole('button', { name: 'Signal…', exact: true }).click()
    const dialog = page.getByRole('dialog', { name: 'Send a signal' })
    await dialog.waitFor()
    await dialog.getByLabel('Signal name').fill(run.signal)
    // Not JSON: the form says so and sends nothing.
    await dialog.getByLabel('Value (JSON, optional)').fill('{not json')
    await dialog.getByRole('button', { name: 'Send signal' }).click()
    await dialog.getByRole('alert').filter({ hasText: 'Not valid JSON' }).waitFor()
    await audit(page, 'run-signal-dialog')
    await dialog.getByLabel('Value (JSON, optional)').fill(JSON.stringify(value))
    await dialog.getByRole('button', { name: 'Send signal' }).click()
    await dialog.waitFor({ state: 'detached' })

    // The history shows the signal with its value, sent by the console.
    const signaled = page
      .locator('ol.timeline > li')
      .filter({ has: page.locator('.event-type', { hasText: /^SignalReceived$/ }) })
    await signaled.first().waitFor({ timeout: generous(20_000) })
    assert.equal(await signaled.count(), 1, 'one SignalReceived event')
    assert.ok((await text(signaled.locator('.event-what'))).includes(run.signal), 'the event names the signal')
    await signaled.locator('summary').click()
    const details = signaled.locator('.event-details')
    assert.ok((await text(details)).includes(JSON.stringify(value)), `the event's payload is ${JSON.stringify(value)}`)
    assert.ok((await text(details)).includes('strand-console'), 'the console sent it')
    const events = await apiHistory(run)
    const received = events.find((e) => e.type === 'SignalReceived')
    assert.deepEqual([received?.name, received?.payload], [run.signal, value], 'the API has the signal too')

    // The worker goes on with it: the run completes with the approver shouted.
    await checkSummary(page, run, 'completed')
    await checkJSON(page, 'Result', `${run.input} approved by ${value.toUpperCase()}`)
    await checkHistory(page, run)
    await checkGantt(page, { ...run, steps: ['Shout'] })
    await audit(page, 'run-signaled', { prepare: openBarsTable })
  })
})
