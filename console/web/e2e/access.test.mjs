// Access control in the console, in a real browser, against the second
// server the Go test starts (cmd/strand/console_browser_test.go,
// consoleSecured): one with users, whose default namespace has a run that
// stays open (fixture.secure.waiting). root is a cluster admin, nadia an
// admin, otto an operator and rita a reader of default.
//
// Each test opens the console without a session: it sends the user to log
// in, and back to where they were after. Then what each role sees: a
// reader no buttons that change a run (and the server refuses the calls
// the buttons would make, forged from the page, with or without the
// console's header), an operator the buttons (terminate, pressed last), a
// cluster admin the namespaces with their quotas. Logging out ends the
// session on the server: its cookie, kept, is refused afterwards. The
// audit log: a reader has no link to it and the server refuses it; a
// cluster admin finds their own login and change and a reader's refused
// ones, by actor, namespace and time, in pages; a namespace's admin that
// namespace's entries only. The login page and the
// pages as each role sees them are audited in both themes (screenshots,
// axe-core), as every page of the console is.

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { audit, close, eventually, fixture, launch, text, withPage, generous } from './helpers.mjs'

const secure = fixture.secure
const base = secure.url
const { admin, namespace_admin: nsAdmin, operator, reader } = secure.users
const ns = 'default'
const timeout = generous(90_000)

/** The terminate call of the waiting run, as the run page's button makes it. */
const terminatePath = `/api/v1/namespaces/${ns}/workflows/${encodeURIComponent(secure.waiting)}/terminate`

/** Who-am-I without a session: the console asks it first, and is sent to log in. */
const noSession = { method: 'GET', path: '/api/v1/whoami', status: 401 }

let browser

before(async () => {
  browser = await launch()
})
after(close)

/** Opens path of the secure server's console; calls declared to fail are the page's refusals. */
function withSecurePage(path, fn, expectedFailures = []) {
  return withPage(path, fn, { base, expectedFailures: [noSession, ...expectedFailures] })
}

/** The login form. */
function loginForm(page) {
  return page.getByRole('form', { name: 'Log in' })
}

/** Waits for the login page, logs in as user, and waits to have left it with the user named in the header. */
async function logIn(page, user) {
  await page.waitForURL((u) => u.pathname === '/login')
  const form = loginForm(page)
  await form.getByLabel('User name').fill(user.name)
  await form.getByLabel('Password').fill(user.password)
  await form.getByRole('button', { name: 'Log in', exact: true }).click()
  await page.waitForURL((u) => u.pathname !== '/login')
  await page.getByRole('button', { name: 'Log out', exact: true }).waitFor()
  const who = await text(page.locator('header .user'))
  assert.ok(who.includes(user.name), `the header names ${user.name}: ${who}`)
}

/** Opens the runs of default and, from its row, the page of the waiting run; waits for its status. */
async function openWaitingRun(page) {
  await page.goto(`/namespaces/${ns}/runs`)
  const link = page.getByRole('link', { name: secure.waiting, exact: true })
  await link.waitFor()
  await link.click()
  await page.waitForURL((u) => u.pathname.startsWith(`/namespaces/${ns}/runs/${secure.waiting}/`))
  assert.equal(await text(page.locator('main h1')), secure.waiting)
  return page.locator('main .page-header .badge')
}

/** The buttons of the run page that change a run: an operator's (signal: a writer's). */
const runActions = [
  'Signal…',
  'Query…',
  'Start again…',
  'Pause…',
  'Resume…',
  'Reset…',
  'Rerun…',
  'Cancel…',
  'Terminate…',
]

/** GET /whoami with a cookie, from a browser context of its own: the status and body. */
async function whoamiWith(cookie) {
  const context = await browser.newContext({ baseURL: base })
  try {
    await context.addCookies([cookie])
    const res = await context.request.get('/api/v1/whoami')
    return [res.status(), await res.json()]
  } finally {
    await context.close()
  }
}

// ---- the login page --------------------------------------------------------

test('a server with access control sends the console to log in; a wrong password is refused', { timeout }, async () => {
  await withSecurePage(
    '/',
    async (page) => {
      await page.waitForURL((u) => u.pathname === '/login')
      assert.equal(await text(page.locator('main h1')), 'Log in')
      // Nothing of the console is shown before logging in.
      assert.equal(await page.getByRole('navigation', { name: 'Main' }).count(), 0, 'no navigation')
      assert.equal(await page.getByRole('button', { name: 'Log out' }).count(), 0, 'no log-out button')
      const form = loginForm(page)
      await audit(page, 'login')

      await form.getByLabel('User name').fill(reader.name)
      await form.getByLabel('Password').fill(`not ${reader.password}`)
      await form.getByRole('button', { name: 'Log in', exact: true }).click()
      const alert = form.getByRole('alert')
      await alert.waitFor()
      const said = await text(alert)
      assert.match(said, /wrong user name or password/, `the server's refusal: ${said}`)
      assert.equal(new URL(page.url()).pathname, '/login', 'still on the login page')
      await audit(page, 'login-error')
    },
    [{ method: 'POST', path: '/api/v1/login', status: 401 }],
  )
})

// ---- a reader ---------------------------------------------------------------

test('a reader sees the run but no button that changes it; the server refuses a forged one', { timeout }, async () => {
  await withSecurePage(
    '/',
    async (page) => {
      await logIn(page, reader)
      // Back to where the console was opened: / leads to the overview.
      await page.waitForURL(`**/namespaces/${ns}/overview`)

      const badge = await openWaitingRun(page)
      await eventually(async () => assert.equal(await text(badge), 'Running'))
      // The summary has come, and with it what the actions would be drawn from.
      await page.getByRole('heading', { name: 'Summary' }).waitFor()
      assert.equal(await page.getByRole('group', { name: 'Actions' }).count(), 0, 'no group of actions')
      for (const name of runActions) {
        assert.equal(await page.getByRole('button', { name, exact: true }).count(), 0, `no ${name} button`)
      }
      await audit(page, 'access-reader-run')

      // What the terminate button would send, forged from the page: the
      // server refuses a reader, with the console's header or without it
      // (without it, no change is taken on a session cookie at all).
      const forged = await page.evaluate(async (url) => {
        const body = '{"reason":"forged"}'
        const out = []
        for (const headers of [
          { 'X-Strand-Console': '1', 'Content-Type': 'application/json' },
          { 'Content-Type': 'application/json' },
        ]) {
          const res = await fetch(url, { method: 'POST', headers, body })
          out.push([res.status, await res.json()])
        }
        return out
      }, terminatePath)
      for (const [i, [status, body]] of forged.entries()) {
        const how = i === 0 ? 'with X-Strand-Console' : 'without X-Strand-Console'
        assert.equal(status, 403, `the forged terminate ${how}: ${JSON.stringify(body)}`)
        assert.equal(body.code, 'permission_denied', `the forged terminate ${how}`)
      }
      const d = await page.evaluate(async (id) => {
        const res = await fetch(`/api/v1/namespaces/default/workflows/${encodeURIComponent(id)}`)
        return res.json()
      }, secure.waiting)
      assert.equal(d.status, 'running', 'the run is still running')

      // The namespaces a reader holds a role in, with their quotas; no
      // button to make or edit one.
      await page.goto('/namespaces')
      const row = page.locator('main tbody tr').filter({ has: page.getByRole('link', { name: `${ns} runs` }) })
      await eventually(async () => assert.match(await text(row), /Open runs/))
      assert.equal(await page.getByRole('button', { name: 'New namespace…' }).count(), 0, 'no New namespace button')
      assert.equal(await page.getByRole('button', { name: /^Edit namespace/ }).count(), 0, 'no Edit button')

      // The session is the cookie, which the page's scripts cannot read;
      // kept, it answers who-am-I from another browser until the user logs
      // out.
      const session = (await page.context().cookies()).find((c) => c.name === 'strand_session')
      assert.ok(session, 'a session cookie')
      assert.ok(session.httpOnly, 'the session cookie is HttpOnly')
      assert.equal(session.sameSite, 'Strict', 'the session cookie is SameSite=Strict')
      assert.equal(await page.evaluate(() => document.cookie.includes('strand_session')), false)
      const [before, me] = await whoamiWith(session)
      assert.equal(before, 200, `who-am-I with the session: ${JSON.stringify(me)}`)
      assert.equal(me.name, reader.name)
      assert.equal(me.access_control, true)
      assert.deepEqual(me.grants?.[ns], ['reader'])

      await page.getByRole('button', { name: 'Log out', exact: true }).click()
      await page.waitForURL((u) => u.pathname === '/login')
      await loginForm(page).waitFor()
      assert.equal(await page.getByRole('button', { name: 'Log out' }).count(), 0, 'no log-out button')
      await eventually(async () => {
        const left = (await page.context().cookies()).filter((c) => c.name === 'strand_session' && c.value !== '')
        assert.deepEqual(left, [], 'the browser dropped the session cookie')
      })
      const [afterLogout, refusal] = await whoamiWith(session)
      assert.equal(afterLogout, 401, `who-am-I with the kept cookie after logging out: ${JSON.stringify(refusal)}`)
      assert.equal(refusal.code, 'unauthenticated')
    },
    [{ method: 'POST', path: terminatePath, status: 403 }],
  )
})

// ---- an operator --------------------------------------------------------------

test('an operator sees the buttons that change a run, and terminates it', { timeout }, async () => {
  await withSecurePage('/', async (page) => {
    await logIn(page, operator)
    const badge = await openWaitingRun(page)
    await eventually(async () => assert.equal(await text(badge), 'Running'))
    const actions = page.getByRole('group', { name: 'Actions' })
    await actions.waitFor()
    for (const name of ['Signal…', 'Pause…', 'Reset…', 'Cancel…', 'Terminate…']) {
      assert.ok(await actions.getByRole('button', { name, exact: true }).isEnabled(), `${name} is offered`)
    }
    await audit(page, 'access-operator-run')

    // Last: the button works, with the session and the console's header.
    await actions.getByRole('button', { name: 'Terminate…', exact: true }).click()
    const dialog = page.getByRole('dialog', { name: 'Terminate the run' })
    await dialog.getByLabel('Reason').fill('ended by the operator')
    await dialog.getByRole('button', { name: 'Terminate run' }).click()
    await dialog.waitFor({ state: 'detached' })
    await eventually(async () => assert.equal(await text(badge), 'Terminated'))
  })
})

// ---- a cluster admin ------------------------------------------------------------

test('a cluster admin comes back to the namespaces after logging in, and sees their quotas', { timeout }, async () => {
  await withSecurePage('/namespaces', async (page) => {
    await page.waitForURL((u) => u.pathname === '/login' && u.searchParams.get('next') === '/namespaces')
    await logIn(page, admin)
    await page.waitForURL((u) => u.pathname === '/namespaces')
    assert.equal(await text(page.locator('main h1')), 'Namespaces')

    // The table comes after the heading, once the namespaces are read.
    let column = -1
    await eventually(async () => {
      const header = (await page.locator('main thead th').allInnerTexts()).map((h) => h.trim())
      column = header.indexOf('Quotas')
      assert.ok(column > 0, `a Quotas column: ${header}`)
    })
    const row = page.locator('main tbody tr').filter({ has: page.getByRole('link', { name: `${ns} runs` }) })
    const quotas = row.locator('td').nth(column)
    await eventually(async () =>
      assert.equal(await text(quotas), 'Starts no bound Open runs no bound Payload no bound'),
    )
    // A cluster admin makes namespaces and edits them.
    await page.getByRole('button', { name: 'New namespace…' }).waitFor()
    await page.getByRole('button', { name: `Edit namespace ${ns}…` }).waitFor()

    // Bounds set (as a cluster admin may, from the page, with the
    // console's header), the page shows each.
    const set = await page.evaluate(async (url) => {
      const res = await fetch(url, {
        method: 'PUT',
        headers: { 'X-Strand-Console': '1', 'Content-Type': 'application/json' },
        body: JSON.stringify({ starts_per_second: 50, start_burst: 100, open_runs: 1000, max_payload: 1048576 }),
      })
      return [res.status, await res.text()]
    }, `/api/v1/namespaces/${ns}/quotas`)
    assert.equal(set[0], 200, `PUT quotas: ${set[1]}`)
    await page.reload()
    await eventually(async () =>
      assert.equal(await text(quotas), 'Starts 50/s (burst 100) Open runs 1,000 Payload 1.0 MiB'),
    )
    await audit(page, 'access-namespaces')
  })
})

// ---- the audit log ------------------------------------------------------------

/** The route of a run's terminate, as the audit log names it. */
const terminateAction = 'POST /namespaces/{namespace}/workflows/{workflow_id}/terminate'

/** The entries the audit page lists (not the rows that show an entry's detail). */
function auditRows(page) {
  return page.locator('main tbody tr[data-entry]')
}

/** The value of attribute name of each row of rows. */
function attrs(rows, name) {
  return rows.evaluateAll((els, n) => els.map((el) => el.getAttribute(n)), name)
}

/** POST /login as user, for a token of their own (not a session): the API, not the console. */
async function tokenOf(user) {
  const res = await fetch(`${base}/api/v1/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: user.name, password: user.password }),
  })
  const body = await res.json()
  assert.equal(res.status, 200, `login as ${user.name}: ${JSON.stringify(body)}`)
  return body.token
}

/**
 * Starts a run of id in default and terminates it, from the page as the
 * console would (the session, the console's header): the run's id.
 */
function startAndTerminate(page, id) {
  return page.evaluate(
    async ({ ns, id }) => {
      const headers = { 'X-Strand-Console': '1', 'Content-Type': 'application/json' }
      const start = await fetch(`/api/v1/namespaces/${ns}/workflows`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ workflow_id: id, workflow_type: 'Approval', queue: 'nobody-polls' }),
      })
      const { run_id } = await start.json()
      const end = await fetch(`/api/v1/namespaces/${ns}/workflows/${id}/terminate`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ run_id, reason: 'audited' }),
      })
      if (!start.ok || !end.ok) throw new Error(`start: ${start.status}, terminate: ${end.status}`)
      return run_id
    },
    { ns, id },
  )
}

test('a reader has no audit log: no link to it, the page says so, the server refuses it', { timeout }, async () => {
  await withSecurePage(
    '/audit',
    async (page) => {
      await logIn(page, reader)
      await page.waitForURL((u) => u.pathname === '/audit')
      const nav = page.getByRole('navigation', { name: 'Main' })
      await nav.getByRole('link', { name: 'Runs', exact: true }).waitFor()
      assert.equal(await nav.getByRole('link', { name: 'Audit log' }).count(), 0, 'no Audit log link')
      await page.getByText('The audit log is for admins.').waitFor()
      assert.equal(await page.getByRole('table').count(), 0, 'no entries')
      await audit(page, 'audit-reader')

      // What the page would ask, asked from it: refused, the namespace
      // named or not.
      const answers = await page.evaluate(async () => {
        const out = []
        for (const url of ['/api/v1/audit', '/api/v1/audit?namespace=default']) {
          const res = await fetch(url, { headers: { 'X-Strand-Console': '1' } })
          out.push([url, res.status, await res.json()])
        }
        return out
      })
      for (const [url, status, body] of answers) {
        assert.equal(status, 403, `GET ${url}: ${JSON.stringify(body)}`)
        assert.equal(body.code, 'permission_denied', `GET ${url}`)
      }
    },
    [{ method: 'GET', path: '/api/v1/audit', status: 403 }],
  )
})

test(
  'a cluster admin reads the audit log: their login, their change, a reader’s refused ones; by actor, namespace and time, in pages',
  { timeout: generous(120_000) },
  async () => {
    const stamp = Date.now().toString(36)
    const started = `audit-${stamp}`
    const refused = `audit-refused-${stamp}`
    const missing = `audit-missing-${stamp}`
    // The admin's own changes, more than a page of the audit log holds:
    // terminates of runs that do not exist.
    const adminToken = await tokenOf(admin)
    const forged = 55
    for (let i = 0; i < forged; i++) {
      const res = await fetch(`${base}/api/v1/namespaces/${ns}/workflows/${missing}-${i}/terminate`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ reason: 'tidying up' }),
      })
      assert.equal(res.status, 404, `the admin's terminate ${i}: ${await res.text()}`)
    }
    // The reader, with a token of their own, tries to cancel runs again and
    // again: the first refusal is written at once, the ones like it (one
    // address, caller, route and status) are counted into one entry when
    // their minute is up. (Cancels: the reader's forged terminate above
    // opened the minute of its terminates.)
    const token = await tokenOf(reader)
    for (let i = 0; i < forged; i++) {
      const res = await fetch(`${base}/api/v1/namespaces/${ns}/workflows/${refused}-${i}/cancel`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ reason: 'not mine to end' }),
      })
      assert.equal(res.status, 403, `the reader's cancel ${i}: ${await res.text()}`)
    }

    await withSecurePage('/audit', async (page) => {
      await page.waitForURL((u) => u.pathname === '/login' && u.searchParams.get('next') === '/audit')
      await logIn(page, admin)
      await page.waitForURL((u) => u.pathname === '/audit')
      assert.equal(await text(page.locator('main h1')), 'Audit log')
      const link = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' })
      assert.equal(await link.getAttribute('aria-current'), 'page', 'the navigation marks the page')

      // A change of the admin's own: a run started, then terminated.
      const runId = await startAndTerminate(page, started)

      // Entries are written in batches beside the answers; the page reads
      // them again every few seconds.
      const rows = auditRows(page)
      const terminated = rows.filter({ has: page.getByRole('link', { name: started, exact: true }) })
      await eventually(async () => assert.equal(await terminated.count(), 1, 'the terminate is listed'), 30_000)
      assert.equal(await terminated.getAttribute('data-actor'), admin.name)
      assert.equal(await terminated.getAttribute('data-action'), terminateAction)
      assert.equal(await terminated.getAttribute('data-status'), '200')
      const cells = (await terminated.locator('td').allInnerTexts()).map((c) => c.replace(/\s+/g, ' ').trim())
      assert.equal(cells[1], admin.name, 'the actor')
      assert.match(cells[2], /^127\.0\.0\.1:\d+$/, 'the remote address')
      assert.equal(cells[3], `Terminate run ${started}`, 'the action, in words')
      assert.equal(await terminated.locator('td').nth(3).getAttribute('title'), terminateAction, 'the route')
      assert.equal(cells[4], ns, 'the namespace')
      assert.equal(cells[5], '200 OK', 'the status')
      assert.equal(
        await terminated.getByRole('link', { name: started, exact: true }).getAttribute('href'),
        `/namespaces/${ns}/runs/${started}/${runId}`,
        'the target links to the run',
      )

      // The reader's first refusal: 403, colored as refused, its target named.
      const refusal = rows.filter({ hasText: `${refused}-0` })
      assert.equal(await refusal.count(), 1, 'the first refusal is on the first page')
      assert.equal(await refusal.getAttribute('data-actor'), reader.name)
      assert.equal(await refusal.getAttribute('data-status'), '403')
      assert.equal(await text(refusal.locator('.badge')), '403 Permission denied')
      assert.match((await refusal.locator('.badge').getAttribute('class')) ?? '', /\bhttp-refused\b/)

      // The admin's login (no one was logged in to make it), newest of the
      // logins: its detail shows the body, the password removed.
      const newest = page.locator('main tbody tr[data-action="POST /login"]').first()
      assert.equal(await newest.getAttribute('data-actor'), '(unauthenticated)')
      assert.equal(await newest.getAttribute('data-status'), '200')
      const toggle = newest.getByRole('button', { name: /the detail$/ })
      assert.equal(await text(toggle), 'Show the detail')
      await toggle.click()
      assert.equal(await text(toggle), 'Hide the detail')
      assert.equal(await toggle.getAttribute('aria-expanded'), 'true')
      const detail = page.locator(`#${await toggle.getAttribute('aria-controls')}`)
      const said = await text(detail)
      for (const want of [`"name": "${admin.name}"`, '"password": "[removed]"', '"session": true']) {
        assert.ok(said.includes(want), `the login's detail has ${want}: ${said}`)
      }
      await audit(page, 'audit')

      // By actor: only theirs.
      const filters = page.getByRole('form', { name: 'Filter the audit log' })
      const namespace = filters.getByLabel('Namespace')
      assert.deepEqual(
        (await namespace.locator('option').allInnerTexts()).map((o) => o.trim()),
        ['All namespaces', ns],
        'a cluster admin chooses every namespace, or one',
      )
      await filters.getByLabel('Actor').fill(admin.name)
      await filters.getByRole('button', { name: 'Apply' }).click()
      await page.waitForURL((u) => u.searchParams.get('actor') === admin.name)
      await eventually(async () => {
        const actors = await attrs(rows, 'data-actor')
        assert.equal(actors.length, 50, 'a page of the admin’s entries')
        assert.deepEqual(new Set(actors), new Set([admin.name]), 'only the admin’s')
      })
      // More than a page: the next one, and back.
      const pager = page.getByRole('group', { name: 'Pages' })
      const first = await attrs(rows, 'data-entry')
      await pager.getByRole('button', { name: 'Next →' }).click()
      await pager.getByText('Page 2').waitFor()
      await eventually(async () => {
        const second = await attrs(rows, 'data-entry')
        assert.ok(second.length > 0, 'a second page')
        assert.ok(!second.some((id) => first.includes(id)), 'of other entries')
        assert.deepEqual(new Set(await attrs(rows, 'data-actor')), new Set([admin.name]), 'the admin’s too')
      })
      await pager.getByRole('button', { name: '← Previous' }).click()
      await pager.getByText('Page 1').waitFor()
      await eventually(async () => assert.deepEqual(await attrs(rows, 'data-entry'), first))

      // By namespace and actor: the admin's changes in default, not their login.
      await filters.getByLabel('Actor').fill(admin.name)
      await namespace.selectOption(ns)
      await filters.getByRole('button', { name: 'Apply' }).click()
      await page.waitForURL((u) => u.searchParams.get('actor') === admin.name && u.searchParams.get('namespace') === ns)
      await eventually(async () => {
        assert.equal(await terminated.count(), 1, 'the terminate is listed')
        assert.deepEqual(new Set(await attrs(rows, 'data-actor')), new Set([admin.name]), 'only the admin’s')
        const namespaces = await rows.evaluateAll((els) => els.map((el) => el.cells[4].innerText.trim()))
        assert.deepEqual(new Set(namespaces), new Set([ns]), 'only default’s')
      })
      assert.equal(await text(page.locator('main .page-header')), `Audit log namespace ${ns}`)

      // By time, from the URL: nothing is recorded in the future.
      const future = new Date(Date.now() + 3_600_000)
      future.setUTCSeconds(0, 0)
      await page.goto(`/audit?since=${encodeURIComponent(future.toISOString())}`)
      await page.getByText('No entries match.').waitFor()
      assert.equal(await rows.count(), 0, 'no entries')
      // The context's time zone is UTC: the field shows the time as the URL has it.
      assert.equal(await filters.getByLabel('Since').inputValue(), future.toISOString().slice(0, 16))
    })
  },
)

test('a namespace’s admin reads that namespace’s audit log only', { timeout }, async () => {
  const started = `audit-${nsAdmin.name}-${Date.now().toString(36)}`
  await withSecurePage(
    '/audit',
    async (page) => {
      await logIn(page, nsAdmin)
      await page.waitForURL((u) => u.pathname === '/audit')
      const link = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' })
      assert.equal(await link.getAttribute('aria-current'), 'page', 'the navigation offers and marks the page')
      // The namespace they administer, chosen for them; not every one
      // (the header names it once the page knows their grants).
      await eventually(async () => assert.equal(await text(page.locator('main .page-header')), `Audit log namespace ${ns}`))
      const filters = page.getByRole('form', { name: 'Filter the audit log' })
      assert.deepEqual(
        (await filters.getByLabel('Namespace').locator('option').allInnerTexts()).map((o) => o.trim()),
        [ns],
        'only the namespace they administer',
      )

      const runId = await startAndTerminate(page, started)
      const rows = auditRows(page)
      const terminated = rows.filter({ has: page.getByRole('link', { name: started, exact: true }) })
      await eventually(async () => assert.equal(await terminated.count(), 1, 'their terminate is listed'), 30_000)
      assert.equal(await terminated.getAttribute('data-actor'), nsAdmin.name)
      assert.equal(
        await terminated.getByRole('link').getAttribute('href'),
        `/namespaces/${ns}/runs/${started}/${runId}`,
      )
      // Only default's entries: not the logins, which name no namespace.
      const namespaces = await rows.evaluateAll((els) => els.map((el) => el.cells[4].innerText.trim()))
      assert.deepEqual(new Set(namespaces), new Set([ns]), 'only default’s entries')
      assert.equal(await page.locator('main tbody tr[data-action="POST /login"]').count(), 0, 'no login')
      await audit(page, 'audit-namespace-admin')

      // Another namespace's entries are refused them.
      const [status, body] = await page.evaluate(async () => {
        const res = await fetch('/api/v1/audit?namespace=elsewhere', { headers: { 'X-Strand-Console': '1' } })
        return [res.status, await res.json()]
      })
      assert.equal(status, 403, `another namespace's entries: ${JSON.stringify(body)}`)
      assert.equal(body.code, 'permission_denied')
    },
    [{ method: 'GET', path: '/api/v1/audit', status: 403 }],
  )
})
