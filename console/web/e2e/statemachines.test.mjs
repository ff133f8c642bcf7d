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
import { api, audit, checkPage, close, eventually, fixture, launch, text, withPage, generous } from './helpers.mjs'

const { namespace: ns, definitions, counts, instances } = fixture.statemachines
const q = `?namespace=${encodeURIComponent(ns)}`
const timeout = generous(120_000)
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
        assert.deepEqual(rows, [instances.granted.id])
      })
      // The error state waits for a person, as a manual state does.
      await list.getByLabel('Status').selectOption('manual')
      await eventually(async () => {
        const rows = await list.locator('tbody tr').evaluateAll((r) => r.map((e) => e.dataset.instance).sort())
        assert.deepEqual(rows, [instances.waiting.id, instances.waiting2.id, instances.failed.id].sort())
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

test('instance page: the path taken on the graph, failure edges around the nodes, the manual wait on the timeline', { timeout }, async () => {
  const inst = instances.granted
  await withPage(instancePath(inst.id), async (page) => {
    const graph = card(page, 'State')
    await graph.locator('.sm-node').first().waitFor()
    // Its path: created, waited for a person, granted, finished, done.
    const path = ['createCreditApplication', 'acceptCreditApplication', 'grantLoan', 'finishCreditApplication', 'done']
    await eventually(async () => {
      const visited = await graph.locator('.sm-node[data-visited]').evaluateAll((ns) => ns.map((n) => n.dataset.state))
      assert.deepEqual(visited.sort(), [...path].sort(), 'the states it went through are marked')
    })
    for (let i = 1; i < path.length; i++) {
      const edge = page.getByTestId(`rf__edge-${path[i - 1]}->${path[i]}`)
      assert.ok(await edge.evaluate((e) => e.classList.contains('sm-edge-taken')), `move ${i} is drawn taken`)
      assert.equal((await edge.locator('.sm-edge-steps').textContent()).trim(), String(i), `move ${i} is numbered`)
    }
    assert.equal(await page.locator('.react-flow__edge.sm-edge-taken').count(), path.length - 1, 'only its moves')

    // No edge runs under a node (its own two only where it leaves and
    // enters them); failure edges were drawn under other states.
    const crossings = await page.evaluate(() => {
      const boxes = [...document.querySelectorAll('.react-flow__node')].map((n) => ({
        id: n.getAttribute('data-id'),
        r: n.getBoundingClientRect(),
      }))
      const out = []
      for (const e of document.querySelectorAll('.react-flow__edge')) {
        const id = e.getAttribute('data-testid').replace('rf__edge-', '')
        const [from, to] = id.split('->')
        const line = e.querySelector('path.react-flow__edge-path')
        const m = line.getScreenCTM()
        const len = line.getTotalLength()
        for (let l = 0; l <= len; l += 2) {
          const p = line.getPointAtLength(l).matrixTransform(m)
          for (const { id: n, r } of boxes) {
            if ((n === from && l < 4) || (n === to && l > len - 4)) continue
            if (p.x > r.left + 1 && p.x < r.right - 1 && p.y > r.top + 1 && p.y < r.bottom - 1) out.push(`${id} under ${n}`)
          }
        }
      }
      return [...new Set(out)]
    })
    assert.ok((await page.locator('.react-flow__edge.sm-edge-failure').count()) > 0, 'the graph has failure edges')
    assert.deepEqual(crossings, [], 'edges cross no node')

    // The wait in the manual state, between the first action and the person's change.
    const chart = card(page, 'Timeline').getByRole('img')
    await chart.locator('canvas').first().waitFor()
    assert.match(await chart.getAttribute('aria-label'), /wait in manual states \(waited in acceptCreditApplication\)/)
    await audit(page, 'statemachine-instance-path', { prepare: toTop })
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

test('the wake-up and signal buttons run a waiting instance, which draws its own version', { timeout }, async () => {
  const base = `/namespaces/${ns}/statemachine-instances`
  const later = new Date(Date.now() + 3_600_000).toISOString()
  const wake = 'delivery/parcel-wake'
  const signaled = 'delivery/parcel-signal'
  for (const id of [wake, signaled]) {
    await api('POST', base, {
      type: 'delivery',
      external_id: id.split('/')[1],
      executor_group: fixture.statemachines.executor_group,
      activation: later,
      vars: { sleep: '10ms' },
    })
  }
  for (const id of [wake, signaled]) {
    await eventually(async () => assert.equal((await apiInstance(id)).status, 'created'), 30_000)
  }
  // A new version of delivery, stored after they were created: they keep theirs.
  const { version } = await apiInstance(wake)
  const { type, description, states, transitions, error_state, retries } = await api(
    'GET',
    `/statemachines/delivery/versions/${version}`,
  )
  const v2 = {
    type,
    description,
    states: [...states, { name: 'returned', kind: 'end', description: 'Sent back' }],
    transitions: { ...transitions, deliver: [...transitions.deliver, 'returned'] },
    error_state,
    retries,
  }
  const stored = await api('POST', '/definitions', {
    type: 'sm/delivery',
    body: Buffer.from(JSON.stringify(v2)).toString('base64'),
  })
  assert.equal(stored.version, version + 1)

  // The definition's page: the latest version; both wait in deliver, neither queued (their activation is an hour away).
  await withPage(`/statemachines/delivery${q}`, async (page) => {
    const deliver = page.locator('.sm-node[data-state="deliver"]')
    await eventually(async () => {
      assert.equal(await deliver.getAttribute('data-count'), '2')
      assert.equal(await deliver.getAttribute('data-queued'), '0')
    }, 30_000)
    await page.locator('.sm-node[data-state="returned"]').waitFor()
    const row = page.locator('table.sm-states tr[data-state="deliver"] td')
    assert.deepEqual(
      (await row.allInnerTexts()).slice(-2).map((c) => c.trim()),
      ['0', '2'],
      'deliver: none queued, two instances',
    )
  })

  await withPage(instancePath(wake), async (page) => {
    await eventually(async () => assert.match(await text(card(page, 'Summary')), /Created/))
    const graph = card(page, 'State')
    await eventually(async () => assert.equal(await graph.locator('.sm-node').count(), states.length, 'its version'))
    assert.equal(await graph.locator('.sm-node[data-state="returned"]').count(), 0, 'not the latest version')
    assert.match(await text(graph.locator('.card-header')), new RegExp(`version ${version}`))
    const form = card(page, 'Manage')
    await form.getByRole('button', { name: 'Wake up' }).click()
    await eventually(async () => assert.match(await text(form.getByRole('status')), /Woken up/))
    await eventually(async () => assert.equal((await apiInstance(wake)).state, 'delivered'), 30_000)
    await eventually(async () => assert.match(await text(card(page, 'Summary')), /Finished/))
  })

  await withPage(instancePath(signaled), async (page) => {
    await eventually(async () => assert.match(await text(card(page, 'Summary')), /Created/))
    const form = card(page, 'Manage')
    // Not an integer: refused in place; nothing is sent.
    await form.getByLabel('Signal (integer)').fill('seven')
    await form.getByRole('button', { name: 'Signal', exact: true }).click()
    await eventually(async () => assert.match(await text(form.getByRole('alert')), /integer/))
    assert.equal((await apiInstance(signaled)).status, 'created')
    await form.getByLabel('Signal (integer)').fill('7')
    await form.getByRole('button', { name: 'Signal', exact: true }).click()
    await eventually(async () => {
      const got = await apiInstance(signaled)
      assert.equal(got.signal, 7)
      assert.equal(got.state, 'delivered')
    }, 30_000)
    await eventually(async () =>
      assert.equal(
        await text(
          card(page, 'Summary')
            .locator('dl.sm-summary > div')
            .filter({ has: page.locator('dt', { hasText: /^Signal$/ }) })
            .locator('dd'),
        ),
        '7',
      ),
    )
  })
})
