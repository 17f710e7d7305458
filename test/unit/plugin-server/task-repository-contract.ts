/**
 * The TaskRepository contract: the memory repository here, the MySQL one against a real MariaDB in
 * test/integration/plugin-server/mysql-task-repository.test.ts — exactly these tests for both.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  addHistory,
  completeTask,
  failTask,
  newTask,
  type TaskRepository,
} from '../../../src/plugin-server/tasks/index.js';

export interface TaskRepositoryFactory {
  create(): Promise<TaskRepository>;
  destroy(repo: TaskRepository): Promise<void>;
}

export function taskRepositoryContract(name: string, factory: TaskRepositoryFactory): void {
  describe(`TaskRepository contract (${name})`, () => {
    let repo: TaskRepository;
    beforeEach(async () => {
      repo = await factory.create();
      await repo.init();
    });
    afterEach(async () => {
      await factory.destroy(repo);
    });

    it('purges finished tasks past the age limit and beyond the newest N, never running ones', async () => {
      const now = Date.now();
      const old = newTask('old', 'o@h', 'req-old', now - 50_000);
      const running = newTask('running', 'o@h', undefined, now - 40_000);
      await repo.create(old);
      await repo.create(running);
      completeTask(old);
      old.updatedAtMs = now - 50_000;
      await repo.save(old);
      for (let i = 0; i < 5; i++) {
        const t = newTask(`recent-${i}`, 'o@h', undefined, now - 10_000 + i);
        await repo.create(t);
        completeTask(t);
        await repo.save(t);
      }
      // By age: 'old' finished 50 s ago, past a 30 s limit.
      expect(await repo.purge({ olderThan: now - 30_000, keep: 100 })).toBe(1);
      expect(await repo.get('old')).toBeUndefined();
      expect(await repo.getByRequestId('req-old')).toBeUndefined();
      // By count: the newest 3 of 6 stay, finished ones beyond go; the running one stays whatever its age.
      expect(await repo.purge({ olderThan: 0, keep: 3 })).toBe(2);
      const left = (await repo.list({ limit: 100 })).map((t) => t.id).sort();
      expect(left).toEqual(['recent-2', 'recent-3', 'recent-4', 'running']);
    });

    it('stores, updates and reads a task back unchanged', async () => {
      const t = newTask('t-1', 'owner@host', undefined, 1000);
      expect(await repo.create(t)).toEqual({ task: t, created: true });
      addHistory(t, 'DEPLOY_KUBERNETES_MANIFEST', 'Sent deployManifest');
      t.resultObjects.push({ manifestNamesByNamespace: { shop: ['deployment web'] } });
      completeTask(t);
      await repo.save(t);
      expect(await repo.get('t-1')).toEqual(t);
      expect(await repo.get('missing')).toBeUndefined();
    });

    it('one task per request id: a second create returns the first task and stores nothing', async () => {
      const first = newTask('a', 'o@h', 'req-1', 1000);
      const second = newTask('b', 'o@h', 'req-1', 2000);
      expect((await repo.create(first)).created).toBe(true);
      const r = await repo.create(second);
      expect(r.created).toBe(false);
      expect(r.task.id).toBe('a');
      expect(await repo.get('b')).toBeUndefined();
      expect((await repo.getByRequestId('req-1'))?.id).toBe('a');
    });

    it('concurrent creates with one request id create exactly one task', async () => {
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => repo.create(newTask(`c-${i}`, 'o@h', 'req-race', 1000 + i))),
      );
      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect(new Set(results.map((r) => r.task.id)).size).toBe(1);
    });

    it('a failed retryable task can be replaced: the request id moves to the new task', async () => {
      const failed = newTask('old', 'o@h', 'req-2', 1000);
      await repo.create(failed);
      failTask(failed, 'Orchestration failed: agent gone', true);
      await repo.save(failed);
      const retry = newTask('new', 'o@h', 'req-2', 2000);
      expect((await repo.create(retry, { replaces: 'old' })).created).toBe(true);
      expect((await repo.getByRequestId('req-2'))?.id).toBe('new');
      expect((await repo.get('old'))?.status.failed).toBe(true);
    });

    it('a task saved under a new owner (resumed on another replica) is kept alive by that owner', async () => {
      const now = Date.now();
      const t = newTask('moved', 'first@h', undefined, now - 60_000);
      await repo.create(t);
      failTask(t, 'Orchestration failed: no agent', true);
      await repo.save(t);
      const read = t.updatedAtMs;
      t.ownerId = 'second@h';
      addHistory(t, 'ORCHESTRATION', 'Resuming task from operation 1 of 1');
      t.status = { ...t.status, complete: false, completed: false, failed: false, retryable: false };
      t.updatedAtMs = read + 1;
      expect(await repo.saveIfUnchanged(t, read)).toBe(true);
      await repo.heartbeat('second@h');
      expect((await repo.abandoned(10_000)).map((x) => x.id)).not.toContain('moved');
      expect((await repo.get('moved'))?.ownerId).toBe('second@h');
    });

    it('a save by a former owner writes nothing once the task was failed by a peer or taken over', async () => {
      const reaped = newTask('reaped', 'first@h', undefined, 1000);
      await repo.create(reaped);
      // A peer fails it (reaping, or PATCH) with a conditional write; then the first owner finishes its run.
      const read = (await repo.get('reaped'))!;
      const failed = structuredClone(read);
      failTask(failed, 'Orchestration failed: the plugin-server replica running the task stopped', true);
      failed.updatedAtMs = read.updatedAtMs + 1;
      expect(await repo.saveIfUnchanged(failed, read.updatedAtMs)).toBe(true);
      completeTask(reaped);
      expect(await repo.save(reaped)).toBe(false);
      expect((await repo.get('reaped'))?.status).toMatchObject({ completed: true, failed: true, retryable: true });

      const moved = newTask('moved-on', 'first@h', undefined, 1000);
      await repo.create(moved);
      const taken = { ...structuredClone(moved), ownerId: 'second@h', updatedAtMs: moved.updatedAtMs + 1 };
      expect(await repo.saveIfUnchanged(taken, moved.updatedAtMs)).toBe(true);
      addHistory(moved, 'ORCHESTRATION', 'still running on the first owner');
      expect(await repo.save(moved)).toBe(false);
      addHistory(taken, 'ORCHESTRATION', 'running on the second owner');
      expect(await repo.save(taken)).toBe(true);
      expect((await repo.get('moved-on'))?.history.at(-1)?.status).toBe('running on the second owner');
      expect(await repo.save(newTask('never-created', 'first@h', undefined))).toBe(false);
    });

    it('of two takeovers of one task read at the same version, exactly one is saved', async () => {
      const t = newTask('taken', 'first@h', undefined, 1000);
      await repo.create(t);
      failTask(t, 'Orchestration failed: no agent', true);
      await repo.save(t);
      const read = (await repo.get('taken'))!;
      const mine = { ...structuredClone(read), ownerId: 'mine@h', updatedAtMs: read.updatedAtMs + 5 };
      const theirs = { ...structuredClone(read), ownerId: 'theirs@h', updatedAtMs: read.updatedAtMs + 7 };
      const results = [
        await repo.saveIfUnchanged(mine, read.updatedAtMs),
        await repo.saveIfUnchanged(theirs, read.updatedAtMs),
      ];
      expect(results).toEqual([true, false]);
      expect((await repo.get('taken'))?.ownerId).toBe('mine@h');
      expect(await repo.saveIfUnchanged({ ...mine, id: 'missing' }, read.updatedAtMs)).toBe(false);
    });

    it('lists newest first, optionally only incomplete tasks', async () => {
      const a = newTask('l-a', 'o@h', undefined, 1000);
      const b = newTask('l-b', 'o@h', undefined, 2000);
      const c = newTask('l-c', 'o@h', undefined, 3000);
      for (const t of [a, b, c]) await repo.create(t);
      completeTask(b);
      await repo.save(b);
      expect((await repo.list({ limit: 10 })).map((t) => t.id)).toEqual(['l-c', 'l-b', 'l-a']);
      expect((await repo.list({ limit: 10, incompleteOnly: true })).map((t) => t.id)).toEqual(['l-c', 'l-a']);
      expect((await repo.list({ limit: 1 })).map((t) => t.id)).toEqual(['l-c']);
    });
  });
}

/**
 * Tasks of a replica that stopped, judged at the database's clock: a SQL repository's case beyond the contract (the
 * memory repository has no clock to age). `silence(id, ms)` ages a task's mark by `ms` in the database, as time
 * passing without heartbeats would (no process here can step that clock).
 */
export async function expectAbandonedJudgedAtStoreClock(
  repo: TaskRepository,
  silence: (id: string, ms: number) => Promise<unknown>,
): Promise<void> {
  // Stamped by the replicas' wall clocks, an hour off: nothing is judged by them.
  const skewed = Date.now() + 3_600_000;
  await repo.create(newTask('dead-1', 'dead@a', undefined, skewed));
  await repo.create(newTask('live-1', 'live@b', undefined, skewed - 7_200_000));
  await silence('dead-1', 60_000);
  await silence('live-1', 60_000);
  await repo.heartbeat('live@b');
  const abandoned = await repo.abandoned(10_000);
  expect(abandoned.map((t) => t.id)).toEqual(['dead-1']);
  const dead = abandoned[0]!;
  failTask(dead, 'Orchestration failed: replica stopped', true);
  // The owner comes back to life before the reaper writes: the write is refused.
  await repo.heartbeat('dead@a');
  expect(await repo.saveIfAbandoned(dead, 10_000)).toBe(false);
  expect((await repo.get('dead-1'))?.status.completed).toBe(false);
  // Silent again past the bound: failed once, and a second reaper finds nothing.
  await silence('dead-1', 20_000);
  expect(await repo.saveIfAbandoned(dead, 10_000)).toBe(true);
  expect(await repo.get('dead-1')).toMatchObject({ status: { completed: true, failed: true, retryable: true } });
  expect(await repo.saveIfAbandoned(dead, 10_000)).toBe(false);
}
