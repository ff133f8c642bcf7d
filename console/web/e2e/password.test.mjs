// Changing one's own password in the console, in a real browser, against
// the server with users that cmd/strand's TestConsoleInBrowser starts
// (fixture.secure). The test makes a user of its own (through the API, as
// root) so that the sessions it ends are no other test's: it logs in on a
// phone's screen, opens "Password" beside its name in the header, is
// refused with a wrong current password, changes it, and is told its other
// session (a login made through the API) ended; that session is refused
// afterwards, the console's own still works, and the new password logs in.

import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { close, fixture, generous, launch, phone, screenshots, text, withPage } from './helpers.mjs'

const secure = fixture.secure
const base = secure.url
const timeout = generous(90_000)

before(launch)
after(close)

/** A call to the secure server's API as token ("" for none): its status and JSON body. */
async function call(method, path, body, token = '') {
  const headers = { 'Content-Type': 'application/json' }
  if (token) headers.Authorization = `Bearer ${token}`
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const t = await res.text()
  return { status: res.status, body: t ? JSON.parse(t) : undefined }
}

/** Logs in name through the API: a login token. */
async function loginToken(name, password) {
  const r = await call('POST', '/login', { name, password })
  assert.equal(r.status, 200, `login ${name}: ${JSON.stringify(r.body)}`)
  return r.body.token
}

test('a user changes their own password on a phone; their other session ends', { timeout }, async () => {
  const root = secure.users.admin
  const rootToken = await loginToken(root.name, root.password)
  const name = `pat-${Date.now().toString(36)}`
  const first = "pat's first password"
  const second = "pat's second password"
  const made = await call('POST', '/users', { name, password: first }, rootToken)
  assert.equal(made.status, 200, JSON.stringify(made.body))
  const granted = await call('PUT', `/namespaces/default/grants/${name}`, { roles: ['reader'] }, rootToken)
  assert.equal(granted.status, 200, JSON.stringify(granted.body))
  const elsewhere = await loginToken(name, first)

  const noSession = { method: 'GET', path: '/api/v1/whoami', status: 401 }
  const wrongCurrent = { method: 'PUT', path: '/api/v1/whoami/password', status: 400 }
  await withPage(
    '/',
    async (page) => {
      await page.waitForURL((u) => u.pathname === '/login')
      const form = page.getByRole('form', { name: 'Log in' })
      await form.getByLabel('User name').fill(name)
      await form.getByLabel('Password').fill(first)
      await form.getByRole('button', { name: 'Log in', exact: true }).click()
      await page.waitForURL((u) => u.pathname !== '/login')

      // On a phone the header's user part sits behind the menu button.
      const menu = page.getByRole('button', { name: /menu/i })
      if (await menu.isVisible()) await menu.click()
      await page.getByRole('button', { name: 'Password', exact: true }).click()
      const dialog = page.getByRole('dialog', { name: 'Change password' })
      await dialog.getByLabel('Current password').fill('not my password')
      await dialog.getByLabel('New password', { exact: true }).fill(second)
      await dialog.getByLabel('New password again').fill(second)
      await page.screenshot({ path: join(screenshots, 'password-form-phone.png'), fullPage: true })
      await dialog.getByRole('button', { name: 'Change password' }).click()
      const refusal = dialog.getByRole('alert')
      await refusal.waitFor()
      assert.match(await text(refusal), /current_password/)
      assert.equal((await call('GET', '/whoami', undefined, elsewhere)).status, 200, 'a refused change ended a session')

      await dialog.getByLabel('Current password').fill(first)
      await dialog.getByRole('button', { name: 'Change password' }).click()
      const done = dialog.getByRole('status')
      await done.waitFor()
      assert.match(await text(done), /Your password is changed\. 1 other session ended/)
      await page.screenshot({ path: join(screenshots, 'password-changed-phone.png'), fullPage: true })
      const width = await page.evaluate(() => document.documentElement.scrollWidth)
      assert.ok(width <= phone.width, `the page is ${width}px wide on a ${phone.width}px screen`)
      await dialog.getByRole('button', { name: 'Done' }).click()
      await dialog.waitFor({ state: 'detached' })

      // The other session is refused; the console's own still works.
      assert.equal((await call('GET', '/whoami', undefined, elsewhere)).status, 401, 'the other session still works')
      const me = await page.evaluate(async () => (await fetch('/api/v1/whoami')).status)
      assert.equal(me, 200, "the console's session ended")
    },
    { base, size: phone, expectedFailures: [noSession, wrongCurrent] },
  )
  assert.equal((await call('POST', '/login', { name, password: first })).status, 401, 'the old password still logs in')
  await loginToken(name, second)
  await call('DELETE', `/users/${name}`, undefined, rootToken)
})
