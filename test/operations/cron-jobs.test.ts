// list_cron_jobs, add_cron_job and remove_cron_job (CONTRACT §14) through the one pipeline, as the
// administrator acting for a holder and as the holder, with the record driver: schedules and
// commands checked strictly, the configuration's limit taken atomically, audit and events.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cronFields, parseCronSchedule } from '../../src/core/cron.ts';
import { ApiError } from '../../src/core/errors.ts';
import { cronJobsOf } from '../../src/store/cron-jobs.ts';
import {
  callAsOwnHolder,
  callForHolder,
  createAccount,
  holderAuditRow,
  refusal,
  refused,
  suiteHarness,
  webhookTaking,
} from '../helpers.ts';

interface Job {
  id: string;
  schedule: string;
  command: string;
  created: string;
}

describe('schedules of five cron fields', () => {
  it('takes numbers, ranges, steps, lists, * and month and weekday names, kept in lower case', () => {
    for (const [given, kept] of [
      ['* * * * *', '* * * * *'],
      ['*/5  0-6/2 1,15,31 JAN-mar 1-5', '*/5 0-6/2 1,15,31 jan-mar 1-5'],
      ['0 0 * dec sun', '0 0 * dec sun'],
      ['59 23 31 12 7', '59 23 31 12 7'],
      ['\t0\t12 * * mon,wed,fri ', '0 12 * * mon,wed,fri'],
    ])
      assert.equal(parseCronSchedule('schedule', given!), kept);
  });

  it('writes names as numbers for the cron file', () => {
    assert.equal(cronFields('*/5 0 1 jan-mar mon,sun'), '*/5 0 1 1-3 1,0');
    assert.equal(cronFields('0 0 * dec sat'), '0 0 * 12 6');
  });

  it('refuses anything else', () => {
    for (const schedule of [
      '',
      '* * * *',
      '* * * * * *',
      '@reboot',
      '@daily',
      '60 * * * *',
      '* 24 * * *',
      '* * 0 * *',
      '* * * 13 *',
      '* * * * 8',
      '5-1 * * * *',
      '*/0 * * * *',
      '*/61 * * * *',
      '5/10 * * * *',
      '1,,2 * * * *',
      '* * * * mon-',
      'mon * * * *',
      '* * * jan/2 *',
      '* * * * * ; reboot',
      '$(id) * * * *',
      '-1 * * * *',
      '007 * * * *',
      `${'1,'.repeat(120)}1 * * * *`,
    ])
      assert.throws(
        () => parseCronSchedule('schedule', schedule),
        (e: unknown) => e instanceof ApiError && e.code === 'invalid_parameter' && e.param === 'schedule',
        schedule,
      );
  });
});

describe('the cron jobs of an account, as its holder adds and removes them', () => {
  const h = suiteHarness({
    config: {
      cronJobs: 3,
      // A webhook that takes the jobs' events, so that they are kept (it is never reached).
      webhooks: [webhookTaking(['cron_job.added', 'cron_job.removed'])],
    },
    prepare: async (h) => {
      await createAccount(h, 'alice', { domain: 'alice.example' });
      await createAccount(h, 'bob', { domain: 'bob.example' });
      await createAccount(h, 'carol', { domain: 'carol.example' });
    },
  });
  const add = (user: string, params: Record<string, string>) =>
    callForHolder(h, user, 'add_cron_job', params);

  it('add_cron_job answers the job made, and list_cron_jobs lists the jobs oldest first', async () => {
    const made = await add('alice', { schedule: '*/15  * * * MON', command: 'php public_html/cron.php' });
    const job = made.data as Job;
    assert.equal(made.info, `Cron job ${job.id} added`);
    assert.match(job.id, /^[a-z2-7]{10}$/);
    assert.deepEqual(
      { schedule: job.schedule, command: job.command },
      { schedule: '*/15 * * * mon', command: 'php public_html/cron.php' },
    );
    assert.ok(!Number.isNaN(Date.parse(job.created)));
    const second = (await add('alice', { schedule: '0 3 * * *', command: 'echo "$HOME" > x' })).data as Job;
    const listed = (await callForHolder(h, 'alice', 'list_cron_jobs')).data as Job[];
    assert.deepEqual(
      listed.map((j) => j.id),
      [job.id, second.id],
    );
    assert.deepEqual((await callForHolder(h, 'bob', 'list_cron_jobs')).data, []);
  });

  it('a bad schedule or command is 400 invalid_parameter, and nothing is added', async () => {
    for (const [param, params] of [
      ['schedule', { schedule: '@reboot', command: 'true' }],
      ['schedule', { schedule: '* * * *', command: 'true' }],
      ['command', { schedule: '* * * * *', command: 'true\nrm -rf ~' }],
      ['command', { schedule: '* * * * *', command: 'true\rx' }],
      ['command', { schedule: '* * * * *', command: 'a\tb' }],
      ['command', { schedule: '* * * * *', command: '   ' }],
      ['command', { schedule: '* * * * *', command: 'x'.repeat(1001) }],
    ] as const) {
      const answer = await refused(add('bob', params));
      assert.deepEqual([answer.code, answer.param], ['invalid_parameter', param], JSON.stringify(params));
    }
    assert.equal((await refused(add('bob', { schedule: '* * * * *' }))).code, 'missing_parameter');
    assert.deepEqual(await cronJobsOf(h.services.store.db, 'bob'), []);
    // At most 1000 characters is one line still.
    await add('bob', { schedule: '* * * * *', command: 'y'.repeat(1000) });
  });

  it('concurrent adds never pass the limit, which names itself', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => add('carol', { schedule: `${i} * * * *`, command: `echo ${i}` })),
    );
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 3);
    for (const r of results)
      if (r.status === 'rejected') {
        const error = r.reason as ApiError;
        assert.equal(error.code, 'limit_reached');
        assert.match(error.message, /cron_jobs limit \(3\)/);
      }
    assert.equal((await cronJobsOf(h.services.store.db, 'carol')).length, 3);
  });

  it("remove_cron_job removes the account's job; another's or an unknown id is 400 object_not_found", async () => {
    const [job] = await cronJobsOf(h.services.store.db, 'alice');
    assert.deepEqual(await refusal(callForHolder(h, 'bob', 'remove_cron_job', { id: job!.id })), {
      status: 400,
      code: 'object_not_found',
    });
    assert.deepEqual(await refusal(callForHolder(h, 'alice', 'remove_cron_job', { id: 'aaaaaaaaaa' })), {
      status: 400,
      code: 'object_not_found',
    });
    const bad = await refused(callForHolder(h, 'alice', 'remove_cron_job', { id: '../x' }));
    assert.deepEqual([bad.code, bad.param], ['invalid_parameter', 'id']);
    const removed = await callForHolder(h, 'alice', 'remove_cron_job', { id: job!.id });
    assert.equal(removed.info, `Cron job ${job!.id} removed`);
    assert.equal((removed.data as Job).command, 'php public_html/cron.php');
    assert.equal((await cronJobsOf(h.services.store.db, 'alice')).length, 1);
    // Room again under the limit.
    await add('carol', { schedule: '* * * * *', command: 'true' }).then(
      () => assert.fail('carol is at the limit'),
      (e: ApiError) => assert.equal(e.code, 'limit_reached'),
    );
    const [first] = await cronJobsOf(h.services.store.db, 'carol');
    await callForHolder(h, 'carol', 'remove_cron_job', { id: first!.id });
    await add('carol', { schedule: '* * * * *', command: 'true' });
  });

  it('the holder adds to its own account alone, audited as customer:<user>', async () => {
    const made = await callAsOwnHolder(h, 'bob', 'add_cron_job', {
      schedule: '0 0 * * *',
      command: 'date',
      user: 'alice',
    });
    const id = (made.data as Job).id;
    assert.ok((await cronJobsOf(h.services.store.db, 'bob')).some((j) => j.id === id));
    assert.ok(!(await cronJobsOf(h.services.store.db, 'alice')).some((j) => j.id === id));
    const row = await holderAuditRow(h, 'add_cron_job', 'bob');
    assert.deepEqual([row?.api_user, row?.target, row?.status], ['customer:bob', 'bob', 200]);
  });

  it('each change is audited as the administrator acting for the holder and sends its event', async () => {
    const { db } = h.services.store;
    const audit = await db
      .selectFrom('audit_log')
      .selectAll()
      .where('operation', 'in', ['add_cron_job', 'remove_cron_job'])
      .where('status', '=', 200)
      .where('api_user', '!=', 'customer:bob')
      .execute();
    assert.ok(audit.length >= 7);
    for (const row of audit) assert.equal(row.target, row.acting_for);
    const events = (
      await db.selectFrom('events').select(['type', 'payload']).where('type', 'like', 'cron_job.%').execute()
    ).map((e) => ({ type: e.type, ...JSON.parse(e.payload) }));
    assert.ok(
      events.some(
        (e) =>
          e.type === 'cron_job.added' &&
          e.account === 'alice' &&
          e.data.command === 'php public_html/cron.php',
      ),
    );
    assert.ok(
      events.some(
        (e) => e.type === 'cron_job.removed' && e.account === 'alice' && /^[a-z2-7]{10}$/.test(e.data.id),
      ),
    );
  });
});
