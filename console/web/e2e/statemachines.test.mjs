// The state machines' pages in a real browser: the definitions list, a
// definition's page (graph with the instances per state, states,
// instances, the create form) and an instance's page (actions, variables
// after each action, timeline, the manage form), against the instances
// cmd/strand's TestConsoleInBrowser made with the CLI and the test worker
// (fixture.statemachines; see console_browser_test.go).
//
// The tests run in order: those that only look come first; then those that
// change things (an instance moved on from the browser, one created).

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { api, audit, checkPage, close, eventually, fixture, launch, text, withPage } from './helpers.mjs'

const { namespace: ns, definitions, counts, instances } = fixture.statemachines
const q = `?namespace=${encodeURIComponent(ns)}`
const timeout = 120_000
const credit = definitions.creditApplication

before(launch)
after(close)

function card(page, heading) {
  return page
    .locator('section.card')
    .filter({ has: page.getByRole('heading', { level: 2, name: heading, exact: true }) })
}

function instancePath(id) {
  return `/statemachine-instances/${encodeURIComponent(ns)}/${encodeURIComponent(id)}`
}

function apiInstance(id) {
  return api('GET', `/namespaces/${ns}/statemachine-instances/${encodeURIComponent(id)}`)
}

async function toTop(page) {
  await page.evaluate(() => window.scrollTo(0, 0))
}

/** The edges the graph should draw: each permitted move, then dashed, where failures go (smLayout.ts). */
function expectedEdges(def) {
  const edges = new Map()
  for (const s of def.states) for (const to of def.transitions[s.name] ?? []) edges.set(`${s.name}->${to}`, false)
  for (const s of def.states) {
    const to = s.failure || (['start', 'normal', 'wait'].includes(s.kind) ? def.error_state : undefined)
    if (to && to !== s.name && !edges.has(`${s.name}->${to}`)) edges.set(`${s.name}->${to}`, true)
  }
  return edges
}

test('state machines page lists the definitions', { timeout }, async () => {
  await checkPage({
    name: 'statemachines',
    path: `/statemachines${q}`,
    async check(page) {
      assert.equal(await text(page.locator('main h1')), 'State machines')
      await eventually(async () =>
        assert.equal(await page.locator('main tbody tr').count(), Object.keys(definitions).length, 'a row per type'),
      )
      for (const d of Object.values(definitions)) {
        const row = page.locator(`tr[data-type="${d.type}"]`)
        const link = row.getByRole('link', { name: d.type, exact: true })
        assert.equal(await link.getAttribute('href'), `/statemachines/${d.type}${q}`)
        const cells = (await row.locator('td').allInnerTexts()).map((c) => c.trim())
        assert.deepEqual(cells.slice(1, 4), [d.description, String(d.version), String(d.states.length)])
      }
    },
  })
})

test('definition page: the graph with the instances per state, the states, the instances', { timeout }, async () => {
  await checkPage({
    name: 'statemachine',
    path: `/statemachines/${credit.type}${q}`,
    prepare: toTop,
    async check(page) {
      assert.equal(await text(page.locator('main h1')), credit.type)
      const nodes = page.locator('.sm-node')
      await eventually(async () => assert.equal(await nodes.count(), credit.states.length, 'a node per state'))
      const want = counts.creditApplication
      for (const s of credit.states) {
        const n = page.locator(`.sm-node[data-state="${s.name}"]`)
        assert.equal(await n.getAttribute('data-kind'), s.kind, `kind of ${s.name}`)
        const c = want[s.name] ?? 0
        await eventually(async () => assert.equal(await n.getAttribute('data-count'), String(c), `count of ${s.name}`))
        const shown = await text(n)
        assert.ok(shown.startsWith(s.name), `node ${s.name}: ${shown}`)
        assert.ok(shown.includes(`${c} instance${c === 1 ? '' : 's'}`), `node ${s.name} counts ${c}: ${shown}`)
        const row = page.locator(`table.sm-states tr[data-state="${s.name}"] td`)
        assert.equal((await row.last().innerText()).trim(), String(c), `the states table counts ${s.name}`)
      }
      const edges = expectedEdges(credit)
      assert.equal(await page.locator('.react-flow__edge').count(), edges.size, 'an edge per move and failure')
      for (const [id, failure] of edges) {
        const edge = page.getByTestId(`rf__edge-${id}`)
        await edge.waitFor({ state: 'attached' })
        assert.equal(await edge.evaluate((e) => e.classList.contains('sm-edge-failure')), failure, `edge ${id} dashed`)
      }
      // The instances, filtered by state.
      const list = card(page, 'Instances')
      await eventually(async () =>
        assert.equal(
          await list.locator('tbody tr').count(),
          Object.values(instances).filter((i) => i.type === credit.type).length,
        ),
      )
      await list.getByLabel('State').selectOption('acceptCreditApplication')
      await eventually(async () => {
        const rows = await list.locator('tbody tr').evaluateAll((r) => r.map((e) => e.dataset.instance).sort())
        assert.deepEqual(rows, [instances.waiting.id, instances.waiting2.id])
      })
      await list.getByLabel('State').selectOption('')
      await list.getByLabel('Status').selectOption('finished')
      await eventually(async () => {
        const rows = await list.locator('tbody tr').evaluateAll((r) => r.map((e) => e.dataset.instance).sort())
        assert.deepEqual(rows, [instances.granted.id, instances.failed.id].sort())
      })
      await list.getByLabel('Status').selectOption('')
    },
  })
})

test('instance page: summary, actions, variables after each action, timeline', { timeout }, async () => {
  const inst = instances.granted
  await checkPage({
    name: 'statemachine-instance',
    path: instancePath(inst.id),
    prepare: toTop,
    async check(page) {
      assert.equal(await text(page.locator('main h1')), inst.id)
      const summary = card(page, 'Summary')
      await eventually(async () => assert.match(await text(summary), /Finished/))
      for (const [k, v] of Object.entries(inst.vars)) {
        assert.equal(await text(summary.locator(`.sm-vars [data-var="${k}"] dd`)), v, `variable ${k}`)
      }
      assert.match(await text(summary), new RegExp(inst.business_key))
      const rows = page.locator('table.sm-actions-table tbody tr')
      assert.equal(await rows.count(), inst.actions.length, 'a row per action')
      const got = await rows.evaluateAll((r) => r.map((e) => [e.dataset.type, e.dataset.state]))
      assert.deepEqual(
        got,
        inst.actions.map((a) => [a.type, a.state]),
      )
      for (let i = 0; i < inst.actions.length; i++) {
        const a = inst.actions[i]
        const row = rows.nth(i)
        if (a.text) assert.ok((await text(row)).includes(a.text), `action ${i + 1} text`)
        for (const [k, v] of Object.entries(a.updated ?? {})) assert.ok((await text(row)).includes(`${k}=${v}`))
      }
      // The variables after the second action (the external change): approver new, loanId not yet.
      await page.getByRole('button', { name: 'Variables after action 2' }).click()
      const after = page.locator('.sm-vars-after')
      await eventually(async () => assert.equal(await text(after.locator('h3')), 'Variables after action 2'))
      assert.equal(
        await after
          .locator('[data-var="approver"] dd')
          .innerText()
          .then((s) => s.startsWith('ada')),
        true,
      )
      assert.equal(await after.locator('[data-var="approver"]').getAttribute('data-changed'), 'true')
      assert.equal(await after.locator('[data-var="amount"]').getAttribute('data-changed'), null)
      assert.equal(await after.locator('[data-var="loanId"]').count(), 0, 'loanId is set later')
      await card(page, 'Timeline').getByRole('img').locator('canvas').first().waitFor()
      assert.ok(await page.getByRole('button', { name: 'Update' }).isDisabled(), 'a finished instance cannot change')
      await page.getByRole('button', { name: 'Variables after action 4' }).click()
    },
  })
})

test('moving a manual instance on from the form adds an external change', { timeout }, async () => {
  const inst = instances.waiting
  await withPage(instancePath(inst.id), async (page) => {
    await eventually(async () => assert.match(await text(card(page, 'Summary')), /Manual/))
    // An unknown state, through the API: refused, nothing changes.
    const res = await fetch(
      `${process.env.STRAND_URL}/api/v1/namespaces/${ns}/statemachine-instances/${encodeURIComponent(inst.id)}`,
      { method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ state: 'nowhere' }) },
    )
    assert.equal(res.status, 400, 'an unknown state is refused')
    assert.equal((await apiInstance(inst.id)).actions.length, inst.actions.length, 'nothing changed')
    await audit(page, 'statemachine-manual', { prepare: toTop })
    const form = card(page, 'Manage')
    await form.getByLabel('Move to state').selectOption('rejectCreditApplication')
    await form.getByLabel('Reason').fill('too risky')
    await form.getByRole('button', { name: 'Add variable' }).click()
    await form.getByLabel('Name of variable 1').fill('reviewer')
    await form.getByLabel('Value of variable 1').fill('grace')
    await form.getByRole('button', { name: 'Update' }).click()
    await eventually(async () => {
      const got = await apiInstance(inst.id)
      assert.equal(got.state, 'done')
      assert.equal(got.status, 'finished')
    }, 30_000)
    const rows = page.locator('table.sm-actions-table tbody tr')
    await eventually(async () => {
      const got = await rows.evaluateAll((r) => r.map((e) => [e.dataset.type, e.dataset.state]))
      assert.deepEqual(got, [
        ...inst.actions.map((a) => [a.type, a.state]),
        ['externalChange', 'rejectCreditApplication'],
        ['stateExecution', 'rejectCreditApplication'],
        ['stateExecution', 'finishCreditApplication'],
      ])
    }, 20_000)
    assert.ok((await text(rows.nth(inst.actions.length))).includes('reviewer=grace'))
    assert.ok((await text(rows.nth(inst.actions.length))).includes('too risky'))
  })
})

test('the create form creates an instance, and shows the API error for bad input', { timeout }, async () => {
  const dup = instances.granted.external_id
  const path = `/api/v1/namespaces/${ns}/statemachine-instances`
  await withPage(
    `/statemachines/${credit.type}${q}`,
    async (page) => {
      const form = card(page, 'Create instance')
      await form.waitFor()
      const before = (await api('GET', `/namespaces/${ns}/statemachine-instances?type=${credit.type}`)).runs.length
      // A duplicate external id: refused in place.
      await form.getByLabel('External ID').fill(dup)
      await form.getByRole('button', { name: 'Create instance' }).click()
      await eventually(async () => assert.match(await text(form.getByRole('alert')), new RegExp(dup)))
      // An unknown start state: refused in place.
      await form.getByLabel('External ID').fill('credit-new')
      await form.getByLabel('Start state').fill('nowhere')
      await form.getByRole('button', { name: 'Create instance' }).click()
      await eventually(async () => assert.match(await text(form.getByRole('alert')), /no state "nowhere"/))
      await audit(page, 'statemachine-create-error', {
        prepare: async (p) => card(p, 'Create instance').scrollIntoViewIfNeeded(),
      })
      assert.equal(
        (await api('GET', `/namespaces/${ns}/statemachine-instances?type=${credit.type}`)).runs.length,
        before,
        'nothing was created',
      )
      // Good input: created, its page opens.
      await form.getByLabel('Start state').fill('')
      await form.getByRole('button', { name: 'Add variable' }).click()
      await form.getByLabel('Name of variable 1').fill('amount')
      await form.getByLabel('Value of variable 1').fill('42')
      await form.getByLabel('Business key').fill('customer-new')
      await form.getByRole('button', { name: 'Create instance' }).click()
      await page.waitForURL(`**${instancePath(`${credit.type}/credit-new`)}`)
      await eventually(async () => {
        const got = await apiInstance(`${credit.type}/credit-new`)
        assert.equal(got.state, 'acceptCreditApplication')
        assert.equal(got.vars.amount, '42')
      }, 30_000)
      await eventually(async () => assert.match(await text(card(page, 'Summary')), /acceptCreditApplication/))
    },
    {
      expectedFailures: [
        { method: 'POST', path, status: 409 },
        { method: 'POST', path, status: 400 },
      ],
    },
  )
})
