// The DAG pipelines' pages in a real browser: the DAGs list, a DAG's page
// (graph, versions, instances), the editor, and an instance's page (tasks'
// states, a task's panel and log, the timeline, the commands), against the
// definitions and instances cmd/strand's TestConsoleInBrowser made with the
// CLI and a strand worker (fixture.dags; see helpers.mjs).
//
// The tests run in order: those that only look come first; then those that
// change things (a new DAG, a new version, an instance run, paused and
// stopped from the browser, a rerun).

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import {
  api,
  audit,
  checkPage,
  close,
  eventually,
  fixture,
  launch,
  runPath,
  settle,
  text,
  withPage,
  generous,
} from './helpers.mjs'

const { namespace: ns, definitions, instances } = fixture.dags
/** The search that names the instances' namespace on the DAG pages. */
const q = `?namespace=${encodeURIComponent(ns)}`
const timeout = generous(120_000)

before(launch)
after(close)

/** The state names as the console labels them (dagStates.ts). */
const stateLabels = { stop: 'Stopped', kill: 'Killed', ready_pause: 'Ready pause', ready_stop: 'Ready stop' }
function stateLabel(state) {
  const s = state.replaceAll('_', ' ')
  return stateLabels[state] ?? s.charAt(0).toUpperCase() + s.slice(1)
}

/** A card of the page by its heading. */
function card(page, heading) {
  return page
    .locator('section.card')
    .filter({ has: page.getByRole('heading', { level: 2, name: heading, exact: true }) })
}

/** The node of a task in the graph. */
function node(page, task) {
  return page.locator(`.dag-node[data-task="${task}"]`)
}

/** Scrolls back to the top: a full-page screenshot of a scrolled page draws the sticky header mid-page. */
async function toTop(page) {
  await page.evaluate(() => window.scrollTo(0, 0))
}

/** Opens every closed <details> (the tables behind the graphs), so that the audit sees them. */
async function openDetails(page) {
  const closed = page.locator('main details:not([open]) > summary')
  while ((await closed.count()) > 0) await closed.first().click()
  await toTop(page)
}

/**
 * Checks the graph: a node per task with its name and type, forbidden ones
 * marked, an edge per upstream, and each task to the right of the tasks it
 * waits for (laid out left to right).
 */
async function checkGraph(page, tasks) {
  await eventually(async () => assert.equal(await page.locator('.dag-node').count(), tasks.length, 'a node per task'))
  const boxes = {}
  for (const t of tasks) {
    const n = node(page, t.name)
    assert.equal(await n.getAttribute('data-type'), t.type, `type of ${t.name}`)
    const shown = await text(n)
    assert.ok(shown.startsWith(t.name) && shown.includes(t.type), `node ${t.name} shows its name and type: ${shown}`)
    assert.equal(shown.includes('forbidden'), !!t.forbidden, `node ${t.name} is marked forbidden only if it is`)
    assert.equal(await n.evaluate((e) => e.classList.contains('forbidden')), !!t.forbidden)
    boxes[t.name] = await n.boundingBox()
    assert.ok(boxes[t.name] && boxes[t.name].width > 100, `node ${t.name} is drawn`)
  }
  const edges = tasks.flatMap((t) => (t.upstream ?? []).map((u) => [u, t.name]))
  assert.equal(await page.locator('.react-flow__edge').count(), edges.length, 'an edge per upstream')
  for (const [from, to] of edges) {
    await page.getByTestId(`rf__edge-${from}->${to}`).waitFor({ state: 'attached' })
    assert.ok(boxes[from].x + boxes[from].width <= boxes[to].x, `${from} is left of ${to}`)
  }
}

/** Replaces the editor's text, as typing it would. */
async function setEditorText(page, value) {
  await page.locator('.cm-content').click()
  await page.keyboard.press('ControlOrMeta+A')
  await page.keyboard.insertText(value)
}

/** The editor's check status, once it is about the text shown. */
async function checkStatus(page, want) {
  await eventually(async () => assert.match(await text(page.locator('.check-status')), want))
}

/** Checks that the instance's page shows each task in its state, in the graph and in the table. */
async function checkStates(page, tasks) {
  for (const [task, state] of Object.entries(tasks)) {
    await eventually(async () =>
      assert.equal(await node(page, task).getAttribute('data-state'), state, `node ${task} is ${state}`),
    )
    const shown = await text(node(page, task).locator('.dag-node-state'))
    assert.ok(shown.startsWith(stateLabel(state)), `node ${task} says ${stateLabel(state)}: ${shown}`)
    const row = page.locator(`table.task-states tr[data-task="${task}"]`)
    assert.equal(await row.getAttribute('data-state'), state, `the table's row of ${task}`)
  }
}

/** Opens a task's panel by clicking its node; returns the panel. */
async function openTask(page, task) {
  await node(page, task).getByRole('button').click()
  await page.waitForURL(new RegExp(`[?&]task=${task}\\b`))
  const panel = page.locator(`aside.task-panel[data-task="${task}"]`)
  await panel.waitFor()
  return panel
}

/** The panel's facts, term → text. */
async function facts(panel) {
  return Object.fromEntries(
    await panel
      .locator('dl.facts > div')
      .evaluateAll((divs) =>
        divs.map((d) => [d.querySelector('dt').innerText.trim(), d.querySelector('dd').innerText.trim()]),
      ),
  )
}

/**
 * Checks that the timeline's canvas has bars of the colour of a CSS
 * variable: more than min pixels of it (a short attempt beside long ones
 * may be drawn a bar a pixel or two wide).
 */
async function checkTimeline(page, cssVar, min = 20) {
  const chart = card(page, 'Timeline').getByRole('img', { name: /^Timeline of the \d+ tasks/ })
  await chart.locator('canvas').first().waitFor()
  await settle(page)
  await eventually(async () => {
    const hits = await chart
      .locator('canvas')
      .first()
      .evaluate((canvas, v) => {
        const hex = getComputedStyle(document.documentElement).getPropertyValue(v).trim()
        const want = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16))
        const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height)
        let n = 0
        for (let i = 0; i < data.length; i += 4) {
          if (data[i + 3] > 200 && want.every((c, j) => Math.abs(data[i + j] - c) <= 12)) n++
        }
        return n
      }, cssVar)
    assert.ok(hits > min, `the timeline has ${hits} pixels of ${cssVar} bars`)
  })
}

// ---- the DAGs ---------------------------------------------------------------

test('DAGs page lists the DAGs, their versions and release, and toggles it', { timeout }, async () => {
  await checkPage({
    name: 'dags',
    path: `/dags${q}`,
    prepare: toTop,
    async check(page) {
      assert.equal(await text(page.locator('main h1')), 'DAGs')
      assert.equal(await page.getByLabel('Namespace').inputValue(), ns, 'the header names the namespace')
      const { dags } = await api('GET', '/dags')
      await eventually(async () =>
        assert.equal(await page.locator('main tbody tr').count(), dags.length, 'a row per DAG'),
      )
      for (const d of Object.values(definitions)) {
        const row = page.locator(`tr[data-dag="${d.name}"]`)
        const link = row.getByRole('link', { name: d.name, exact: true })
        assert.equal(await link.getAttribute('href'), `/dags/${d.name}${q}`, `link of ${d.name}`)
        const cells = (await row.locator('td').allInnerTexts()).map((c) => c.trim())
        assert.deepEqual(cells.slice(1, 3), ['1', String(d.versions)], `versions of ${d.name}`)
        const online = row.getByRole('switch', { name: `${d.name} online` })
        assert.equal(await online.getAttribute('aria-checked'), String(d.online), `${d.name} online`)
        assert.equal(await text(online), d.online ? 'Online' : 'Offline')
        assert.equal(await row.getByRole('button', { name: `Run ${d.name}` }).isEnabled(), d.online)
      }
      // Offline, a DAG cannot be run; online again, it can.
      const name = definitions.failure.name
      const toggle = page.getByRole('switch', { name: `${name} online` })
      await toggle.click()
      await eventually(async () => assert.equal(await toggle.getAttribute('aria-checked'), 'false'))
      assert.equal(await text(toggle), 'Offline')
      assert.equal((await api('GET', `/dags/${name}`)).release.online, false, 'the API has it offline')
      assert.ok(await page.getByRole('button', { name: `Run ${name}` }).isDisabled(), 'an offline DAG cannot run')
      await toggle.click()
      await eventually(async () => assert.equal(await toggle.getAttribute('aria-checked'), 'true'))
      assert.equal((await api('GET', `/dags/${name}`)).release.online, true, 'the API has it online again')
    },
  })
})

test('DAG page: the graph, the definition, the versions and the instances', { timeout }, async () => {
  const def = definitions.success
  const inst = instances.success
  await checkPage({
    name: 'dag',
    path: `/dags/${def.name}${q}`,
    prepare: openDetails,
    async check(page) {
      assert.equal(await text(page.locator('main h1')), def.name)
      // The header names the current version once the DAG is read (the name comes from the address).
      await eventually(async () => assert.ok((await text(page.locator('.page-header'))).includes('current version 1')))
      await checkGraph(page, def.tasks)
      // The tasks as a table too.
      await page.getByText('The tasks as a table').click()
      const rows = card(page, 'Graph').locator('tbody tr')
      assert.deepEqual(
        (await rows.locator('td:first-child').allInnerTexts()).map((s) => s.trim()),
        def.tasks.map((t) => t.name),
      )
      const definition = await text(card(page, 'Definition'))
      assert.ok(definition.includes(def.description), `the description: ${definition}`)
      for (const [k, v] of Object.entries(def.params)) assert.ok(definition.includes(`${k} ${v}`), `param ${k}`)

      // The versions: one, current, its text as applied.
      const versions = card(page, 'Versions').locator('tbody tr')
      await eventually(async () => assert.equal(await versions.count(), def.versions))
      const v1 = versions.and(page.locator('[aria-current="true"]'))
      assert.equal(await v1.getAttribute('data-version'), '1', 'version 1 is current')
      assert.ok(await v1.getByRole('button', { name: 'Make version 1 current' }).isDisabled())
      await v1.getByRole('button', { name: 'View version 1' }).click()
      const dialog = page.getByRole('dialog', { name: `${def.name} version 1` })
      await dialog.waitFor()
      assert.equal((await dialog.locator('pre').innerText()).trim(), def.text.trim(), 'the text as applied')
      await dialog.getByRole('button', { name: 'Close' }).click()
      await dialog.waitFor({ state: 'detached' })

      // The instances, each linking to its page.
      const instancesCard = card(page, 'Instances')
      const row = instancesCard.locator(`tr[data-instance="${inst.workflow_id}"]`)
      await row.waitFor()
      const link = row.getByRole('link', { name: inst.workflow_id, exact: true })
      assert.equal(await link.getAttribute('href'), `/dag-instances/${ns}/${inst.workflow_id}`)
      assert.ok((await text(row)).includes(inst.run_id), 'the run id')
      assert.equal(await text(row.locator('.badge')), 'Completed', 'the run status')
    },
  })
})

// ---- instances --------------------------------------------------------------

test('instance page of a succeeded instance: states, outputs, logs, timeline', { timeout }, async () => {
  const inst = instances.success
  const def = definitions.success
  await checkPage({
    name: 'dag-instance-success',
    path: `/dag-instances/${ns}/${inst.workflow_id}`,
    prepare: openDetails,
    async check(page) {
      assert.equal(await text(page.locator('main h1')), inst.workflow_id)
      await eventually(async () =>
        assert.equal(await page.locator('.page-header .badge').getAttribute('data-state'), inst.state),
      )
      const summary = await text(card(page, 'Summary'))
      assert.ok(summary.includes(`${inst.dag} version ${inst.version}`), `the DAG and version: ${summary}`)
      for (const [k, v] of Object.entries(def.params)) assert.ok(summary.includes(`${k} ${v}`), `param ${k}`)
      assert.equal(
        await card(page, 'Summary')
          .getByRole('link', { name: `Run ${inst.run_id}` })
          .getAttribute('href'),
        runPath(inst, ns),
        'the run links to its page',
      )
      await checkGraph(page, def.tasks)
      await checkStates(page, inst.tasks)
      // A closed instance: only reruns; from failed only after a failure.
      for (const [name, enabled] of [
        ['Pause', false],
        ['Resume', false],
        ['Stop…', false],
        ['Rerun…', true],
        ['Rerun from failed…', false],
      ]) {
        assert.equal(await page.getByRole('button', { name, exact: true }).isEnabled(), enabled, name)
      }
      // A task's panel: its state, outputs and log.
      for (const [task, line] of Object.entries(inst.logs)) {
        const panel = await openTask(page, task)
        assert.equal(await panel.locator('.badge').first().getAttribute('data-state'), inst.tasks[task])
        await eventually(async () => assert.ok((await panel.locator('pre.task-log').innerText()).includes(line)))
        const f = await facts(panel)
        assert.equal(f.Host, fixture.dags.worker, `the host of ${task}`)
        assert.equal(f.Attempt, '1', `the attempt of ${task}`)
        for (const [k, v] of Object.entries(inst.outputs?.[task] ?? {})) {
          assert.ok((await text(panel)).includes(`${k} ${v}`), `output ${k} of ${task}`)
        }
      }
      const forbidden = def.tasks.find((t) => t.forbidden).name
      const panel = await openTask(page, forbidden)
      assert.ok((await text(panel)).includes('No log: the task has not run.'), 'a forbidden task has no log')
      await checkTimeline(page, '--ok')
      // The panel of the audit: the task with outputs.
      await openTask(page, Object.keys(inst.outputs)[0])
    },
  })
})

test('instance page of a failed instance: the failing task, its stderr and its retry', { timeout }, async () => {
  const inst = instances.failure
  await checkPage({
    name: 'dag-instance-failure',
    path: `/dag-instances/${ns}/${inst.workflow_id}`,
    prepare: toTop,
    async check(page) {
      await eventually(async () =>
        assert.equal(await page.locator('.page-header .badge').getAttribute('data-state'), inst.state),
      )
      await checkGraph(page, definitions.failure.tasks)
      await checkStates(page, inst.tasks)
      assert.ok(await page.getByRole('button', { name: 'Rerun from failed…' }).isEnabled())
      const [task, attempts] = Object.entries(inst.attempts)[0]
      const panel = await openTask(page, task)
      await eventually(async () =>
        assert.ok((await panel.locator('pre.task-log').innerText()).includes(inst.logs[task]), 'its stderr'),
      )
      assert.ok((await text(panel.locator('.task-log-header'))).includes(`attempt ${attempts}`), 'the log says which')
      assert.equal((await facts(panel)).Attempt.split(' ')[0], String(attempts), 'the panel shows the attempt')
      assert.ok((await panel.locator('pre.task-error').innerText()).includes('exit code 3'), 'the error')
      await checkTimeline(page, '--bad')
    },
  })
})

test('instance page of a task that passed on its third attempt: a bar and a log per attempt', { timeout }, async () => {
  const inst = instances.retried
  const [task, states] = Object.entries(inst.attempt_states)[0]
  const lines = inst.attempt_logs[task]
  await checkPage({
    name: 'dag-instance-retried',
    path: `/dag-instances/${ns}/${inst.workflow_id}`,
    prepare: toTop,
    async check(page) {
      await eventually(async () =>
        assert.equal(await page.locator('.page-header .badge').getAttribute('data-state'), inst.state),
      )
      // The timeline: a bar per attempt, the failed ones in the colour of failures.
      const timeline = card(page, 'Timeline')
      const chart = timeline.getByRole('img', { name: /^Timeline of the \d+ tasks/ })
      assert.match(
        await chart.getAttribute('aria-label'),
        new RegExp(`, ${states.length} attempts:`),
        'a bar per attempt',
      )
      const rows = timeline.locator(`tr[data-task="${task}"]`)
      assert.deepEqual(await rows.evaluateAll((rs) => rs.map((r) => r.dataset.state)), states, 'the attempts in order')
      // The passing attempt may be short beside the failed ones and their
      // retry waits: a narrow bar.
      await checkTimeline(page, '--bad', 4)
      await checkTimeline(page, '--ok', 4)
      // The panel: the last attempt's log first, then each attempt's as it is chosen.
      const panel = await openTask(page, task)
      const log = panel.locator('pre.task-log')
      const header = panel.locator('.task-log-header')
      await eventually(async () => assert.ok((await log.innerText()).includes(lines.at(-1)), 'the last attempt'))
      assert.ok((await text(header)).includes(`attempt ${states.length} of ${states.length}`), 'the header says which')
      for (const [i, line] of lines.entries()) {
        await panel.getByRole('button', { name: `Attempt ${i + 1} (${states[i]})` }).click()
        await eventually(async () => {
          assert.ok(
            (await text(header)).includes(`attempt ${i + 1} of ${states.length} (${states[i]})`),
            `attempt ${i + 1}`,
          )
          assert.ok((await log.innerText()).includes(line), `attempt ${i + 1}'s log`)
        })
        if (states[i] === 'failure') {
          assert.ok(
            (await text(log.locator('.stderr').first())).includes('the source is busy'),
            'stderr lines are marked',
          )
        }
      }
    },
  })
})

test('the run of an instance links back to it', { timeout }, async () => {
  const inst = instances.success
  await withPage(runPath(inst, ns), async (page) => {
    const link = page.getByRole('link', { name: 'DAG instance' })
    assert.equal(await link.getAttribute('href'), `/dag-instances/${ns}/${inst.workflow_id}`)
    await link.click()
    await page.waitForURL(`**/dag-instances/${ns}/${inst.workflow_id}`)
    await node(page, Object.keys(inst.tasks)[0]).waitFor()
  })
})

// ---- the editor ---------------------------------------------------------------

test('editor: a problem is shown at its line, Apply waits, a new DAG is applied', { timeout }, async () => {
  const name = 'made-in-browser'
  const bad = [
    `name: ${name}`,
    'tasks:',
    "  - {name: first, type: shell, script: 'echo first'}",
    "  - {name: second, type: shell, upstream: [nope], script: 'echo second'}",
    '',
  ].join('\n')
  const line = 4
  const column = bad.split('\n')[line - 1].indexOf('nope') + 1
  await checkPage({
    name: 'dag-new-applied',
    path: `/dags/new${q}`,
    prepare: toTop,
    async check(page) {
      assert.equal(await text(page.locator('main h1')), 'New DAG')
      const apply = page.getByRole('button', { name: 'Apply', exact: true })
      // The example is valid.
      await checkStatus(page, /^Valid: my-pipeline, 3 tasks\.$/)
      assert.ok(await apply.isEnabled())

      await setEditorText(page, bad)
      await checkStatus(page, /^1 problem\.$/)
      const want = `Line ${line}, column ${column}: tasks[1].upstream[0]: unknown task "nope"`
      const problem = card(page, 'Problems').locator('li')
      assert.equal(await text(problem), want, 'the problem under the editor')
      assert.equal(await problem.getAttribute('data-line'), String(line))
      // In place: the word underlined on its line, a marker in the gutter.
      const marked = page.locator('.cm-content .cm-lintRange-error')
      await eventually(async () => assert.equal(await marked.count(), 1))
      assert.equal(await marked.innerText(), 'nope')
      const markedLine = await marked.evaluate((el) => {
        const lineEl = el.closest('.cm-line')
        return [...lineEl.parentElement.querySelectorAll(':scope > .cm-line')].indexOf(lineEl) + 1
      })
      assert.equal(markedLine, line, 'the underline is on the problem line')
      const gutter = page.locator('.cm-gutter-lint .cm-gutterElement').filter({ has: page.locator('.cm-lint-marker') })
      assert.equal(await gutter.count(), 1, 'one marker in the gutter')
      const number = page.locator('.cm-lineNumbers .cm-gutterElement').filter({ hasText: new RegExp(`^${line}$`) })
      const [a, b] = [await gutter.boundingBox(), await number.boundingBox()]
      assert.ok(Math.abs(a.y - b.y) < 4, `the marker is on line ${line}'s row`)
      assert.ok(await apply.isDisabled(), 'Apply waits for a valid text')
      // The problem's button moves the cursor to it.
      await problem.getByRole('button').click()
      await audit(page, 'dag-editor-problem', { prepare: toTop })

      // Fixed, it applies.
      await setEditorText(page, bad.replace('[nope]', '[first]'))
      await checkStatus(page, /^Valid: made-in-browser, 2 tasks\.$/)
      await card(page, 'Graph').locator('.dag-node[data-task="second"]').waitFor()
      assert.equal(await card(page, 'Problems').locator('li').count(), 0)
      await apply.click()
      await page.waitForURL(`**/dags/${name}${q}`)
      assert.equal(await text(page.locator('main h1')), name)
      const got = await api('GET', `/dags/${name}`)
      assert.deepEqual(got.release, { current: 1, online: true }, 'stored, version 1, online')
      await checkGraph(page, [
        { name: 'first', type: 'shell' },
        { name: 'second', type: 'shell', upstream: ['first'] },
      ])
    },
  })
})

test('editor: an edit of a DAG applies as a new version; an older one is made current again', { timeout }, async () => {
  const def = definitions.success
  const edited = def.text.replace(`description: ${def.description}`, 'description: edited in the browser')
  assert.notEqual(edited, def.text)
  await checkPage({
    name: 'dag-versions',
    path: `/dags/${def.name}/edit${q}`,
    prepare: toTop,
    async check(page) {
      assert.equal(await text(page.locator('main h1')), `Edit ${def.name}`)
      await checkStatus(page, new RegExp(`^Valid: ${def.name}, ${def.tasks.length} tasks\\.$`))
      assert.equal((await page.locator('.cm-content').innerText()).trim(), def.text.trim(), 'the current text')
      await setEditorText(page, edited)
      await checkStatus(page, /^Valid:/)
      await card(page, 'Graph').locator('.dag-node').first().waitFor()
      await audit(page, 'dag-editor', { prepare: toTop })
      await page.getByRole('button', { name: 'Apply', exact: true }).click()
      await page.waitForURL(`**/dags/${def.name}${q}`)
      await eventually(async () => assert.ok((await text(page.locator('.page-header'))).includes('current version 2')))
      const versions = card(page, 'Versions').locator('tbody tr')
      await eventually(async () => assert.equal(await versions.count(), 2))
      assert.equal(await versions.and(page.locator('[aria-current="true"]')).getAttribute('data-version'), '2')
      assert.ok((await text(card(page, 'Definition'))).includes('edited in the browser'))
      const stored = await api('GET', `/dags/${def.name}/versions`)
      assert.equal(stored.versions.length, 2, 'the API has two versions')

      // Version 1 current again.
      await page.getByRole('button', { name: 'Make version 1 current' }).click()
      await eventually(async () =>
        assert.equal(await versions.and(page.locator('[aria-current="true"]')).getAttribute('data-version'), '1'),
      )
      assert.equal((await api('GET', `/dags/${def.name}`)).release.current, 1, 'the API has version 1 current')
      assert.ok((await text(card(page, 'Definition'))).includes(def.description))
    },
  })
})

// ---- commands ---------------------------------------------------------------

test('run a DAG from the list, then pause, resume and stop its instance', { timeout }, async () => {
  const def = definitions.slow
  const id = 'slow-from-browser'
  const [sleeper, next] = def.tasks.map((t) => t.name)
  await checkPage({
    name: 'dag-instance-stopped',
    path: `/dags${q}`,
    prepare: toTop,
    async check(page) {
      await page.getByRole('button', { name: `Run ${def.name}` }).click()
      const dialog = page.getByRole('dialog', { name: `Run ${def.name}` })
      await dialog.waitFor()
      await dialog.getByLabel('Instance ID (optional)').fill(id)
      // The global parameter's row, its value the definition's; and one more.
      const [param, value] = Object.entries(def.params)[0]
      assert.equal(await dialog.getByLabel(`Value of ${param}`).getAttribute('placeholder'), value)
      await dialog.getByRole('button', { name: 'Add parameter' }).click()
      await dialog.getByLabel('Name of parameter 2').fill('who')
      await dialog.getByLabel('Value of parameter 2').fill('browser')
      await audit(page, 'dag-run-dialog', { prepare: toTop })
      await dialog.getByRole('button', { name: 'Run', exact: true }).click()
      await page.waitForURL(`**/dag-instances/${ns}/${id}`)

      const badge = page.locator('.page-header .badge')
      const state = () => badge.getAttribute('data-state')
      await eventually(async () => assert.equal(await node(page, sleeper).getAttribute('data-state'), 'running'))
      await eventually(async () => assert.equal(await state(), 'running'))
      // Not reached yet: no state (submitted is a task waiting for a worker).
      assert.equal(await node(page, next).getAttribute('data-state'), '')
      assert.ok((await text(card(page, 'Summary'))).includes('who browser'), 'the parameter given')
      const panel = await openTask(page, sleeper)
      await eventually(
        async () => assert.ok((await panel.locator('pre.task-log').innerText()).includes(`napping ${value}s`)),
        30_000,
      )
      assert.ok((await text(panel.locator('.task-log-header'))).includes('running'), 'the log of a running task')
      await audit(page, 'dag-instance-running', { prepare: toTop })

      // Pause: the running task finishes, no new one starts.
      await page.getByRole('button', { name: 'Pause', exact: true }).click()
      await eventually(async () => assert.ok(['ready_pause', 'paused'].includes(await state()), await state()))
      assert.ok(await page.getByRole('button', { name: 'Pause', exact: true }).isDisabled())
      await page.getByRole('button', { name: 'Resume', exact: true }).click()
      await eventually(async () => assert.equal(await state(), 'running'))

      // Stop: the running task is killed.
      await page.getByRole('button', { name: 'Stop…', exact: true }).click()
      const confirm = page.getByRole('dialog', { name: 'Stop the instance' })
      await confirm.getByRole('button', { name: 'Stop instance' }).click()
      await confirm.waitFor({ state: 'detached' })
      await eventually(async () => assert.equal(await state(), 'stop'), 30_000)
      await eventually(async () => assert.equal(await node(page, sleeper).getAttribute('data-state'), 'stop'))
      assert.equal(await text(badge), 'Stopped')
      const { instance } = await api('GET', `/namespaces/${ns}/dag-instances/${id}`)
      assert.equal(instance.state, 'stop', 'the API has it stopped')
      assert.equal(instance.params.who, 'browser')
      for (const name of ['Pause', 'Resume', 'Stop…']) {
        assert.ok(await page.getByRole('button', { name, exact: true }).isDisabled(), `${name} once stopped`)
      }
    },
  })
})

test('rerun a failed instance from its failed tasks', { timeout }, async () => {
  const inst = instances.failure
  await withPage(`/dag-instances/${ns}/${inst.workflow_id}`, async (page) => {
    await page.getByRole('button', { name: 'Rerun from failed…' }).click()
    const dialog = page.getByRole('dialog', { name: 'Rerun from the failed tasks' })
    await dialog.getByRole('button', { name: 'Rerun from failed' }).click()
    await dialog.waitFor({ state: 'detached' })
    const status = page.getByRole('status').filter({ hasText: 'Rerun started' })
    await status.waitFor()
    const runId = /run (\S+)\.$/.exec(await text(status))?.[1]
    assert.ok(runId && runId !== inst.run_id, `a new run: ${runId}`)
    // The new run shows, and ends as the first did: the task that failed
    // fails again, the one that succeeded kept its outcome.
    await eventually(
      async () =>
        assert.ok(await page.getByRole('link', { name: `Run ${runId}` }).isVisible(), 'the summary shows the new run'),
      30_000,
    )
    await eventually(
      async () => assert.equal(await page.locator('.page-header .badge').getAttribute('data-state'), inst.state),
      30_000,
    )
    await checkStates(page, inst.tasks)
  })
})
