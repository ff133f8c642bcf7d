// A DAG instance whose task waits for a worker of a group that has none:
// the instance page shows the task submitted, waiting for a worker of its
// group, and that no worker polls the group; the DAG's page warns of the
// group too (fixture.dags.waiting; see cmd/strand's TestConsoleInBrowser).

import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { checkPage, close, eventually, fixture, generous, launch, text } from './helpers.mjs'

const { namespace: ns, waiting } = fixture.dags
const timeout = generous(60_000)

before(launch)
after(close)

test('a task waiting for a worker group with no worker', { timeout }, async () => {
  await checkPage({
    name: 'dag-instance-waiting',
    path: `/dag-instances/${ns}/${waiting.workflow_id}`,
    async check(page) {
      const node = page.locator(`.dag-node[data-task="${waiting.task}"]`)
      await eventually(async () => assert.equal(await node.getAttribute('data-state'), 'submitted'), 30_000)
      assert.ok((await text(node)).includes('Submitted'), 'the node says submitted')
      const notice = page.locator(`.waiting-for-worker [data-queue="dag.${waiting.group}"]`)
      await eventually(async () => assert.equal(await notice.getAttribute('data-no-worker'), 'true'))
      const said = await text(notice)
      assert.ok(
        said.includes(`${waiting.task} is submitted, waiting for a worker of worker group ${waiting.group}`),
        said,
      )
      assert.ok(said.includes(`No worker polls group ${waiting.group}`), said)
      assert.ok(said.includes(`strand worker --group ${waiting.group}`), said)
      // The table of tasks says where it waits, in place of a host.
      const row = page.locator(`tr[data-task="${waiting.task}"]`)
      assert.equal(await row.getAttribute('data-state'), 'submitted')
      assert.ok((await row.textContent()).includes(`waiting for a worker of group ${waiting.group}`), 'the row')
      // The instance runs: its badge says so, not the task's wait.
      assert.equal(await page.locator('.page-header .badge').getAttribute('data-state'), 'running')
    },
  })
  await checkPage({
    name: 'dag-no-worker',
    path: `/dags/${waiting.dag}?namespace=${encodeURIComponent(ns)}`,
    async check(page) {
      const notice = page.locator(`.no-worker [data-queue="dag.${waiting.group}"]`)
      await eventually(async () => assert.ok((await notice.count()) > 0, 'the DAG page warns of the group'))
      const said = await text(notice)
      assert.ok(said.includes(`No worker polls worker group ${waiting.group} in namespace ${ns}`), said)
      assert.ok(said.includes(`task ${waiting.task} waits for one when the DAG runs`), said)
    },
  })
})
