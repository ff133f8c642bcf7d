// Access control in the console, in a real browser, against the second
// server the Go test starts (cmd/strand/console_browser_test.go,
// consoleSecured): one with users, whose default namespace has a run that
// stays open (fixture.secure.waiting). root is a cluster admin, otto an
// operator and rita a reader of default.
//
// Each test opens the console without a session: it sends the user to log
// in, and back to where they were after. Then what each role sees: a
// reader no buttons that change a run (and the server refuses the calls
// the buttons would make, forged from the page, with or without the
// console's header), an operator the buttons (terminate, pressed last), a
// cluster admin the namespaces with their quotas. Logging out ends the
// session on the server: its cookie, kept, is refused afterwards. The
// login page and the pages as each role sees them are audited in both
// themes (screenshots, axe-core), as every page of the console is.

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { audit, close, eventually, fixture, launch, text, withPage } from './helpers.mjs'

const secure = fixture.secure
const base = secure.url
const { admin, operator, reader } = secure.users
const ns = 'default'
const timeout = 90_000

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

    const header = (await page.locator('main thead th').allInnerTexts()).map((h) => h.trim())
    const column = header.indexOf('Quotas')
    assert.ok(column > 0, `a Quotas column: ${header}`)
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
