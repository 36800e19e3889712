// The dashboard's overview (#/): every queue with its counts, throughput and actions, and the
// processed and failed tasks per day.
'use strict';

(() => {
  const d = window.asynqDashboard;
  const { app, h, byId, table, actionsHeader, emptyRow, fmtNumber, fmtBytes, fmtMs, enc, api, act, writable,
    follow, refresh, renderChart } = d;

  const QUEUE_FIELDS = ['size', 'pending', 'active', 'scheduled', 'retry', 'archived', 'completed',
    'aggregating', 'processed', 'failed', 'throughput', 'paused', 'latency', 'memory'];

  // ---- Overview ----------------------------------------------------------------------------

  // A banner saying that the backend can drop tasks (its eviction policy), one line per policy
  // as the backend words it; hidden while the backend keeps every task.
  function evictionBanner(id) {
    return h('div', { id, class: 'banner warn', role: 'alert', hidden: true });
  }

  function showEvictionRisks(banner, risks) {
    banner.replaceChildren(...(risks || []).map((r) => h('p', { 'data-policy': r.policy, text: `Warning: ${r.warning}` })));
    banner.hidden = !risks || risks.length === 0;
  }

  function overviewView(_route, container) {
    const headers = ['Queue', 'Size', 'Pending', 'Active', 'Scheduled', 'Retry', 'Archived', 'Completed',
      'Aggregating', 'Processed', 'Failed', 'Throughput', 'State', 'Latency', 'Memory'];
    if (writable()) headers.push(actionsHeader());
    const queues = table('queues', headers);
    const days = h('select', { id: 'history-days', 'aria-label': 'Days of history' },
      [7, 14, 30, 90].map((d) => h('option', { value: d, text: `${d} days` })));
    days.addEventListener('change', () => refresh());
    const chart = h('div', { id: 'history-chart', class: 'chart', role: 'img', 'aria-label': 'Processed and failed tasks per day' });
    const banner = evictionBanner('eviction-warning');
    container.append(
      banner,
      h('section', { class: 'panel' }, [
        h('div', { class: 'panel-head' }, [h('h1', { text: 'Queues' }),
          h('span', { id: 'throughput', class: 'muted', title: 'Tasks processed per second across queues, since the last refresh' })]),
        queues.node,
      ]),
      h('section', { class: 'panel' }, [
        h('div', { class: 'panel-head' }, [h('h2', { text: 'Processed and failed per day' }), days]),
        chart,
      ]),
    );
    return {
      async update() {
        const [list, history] = await Promise.all([
          api('GET', '/api/queues'),
          api('GET', `/api/history?days=${enc(days.value)}`),
        ]);
        showEvictionRisks(banner, list.eviction_risks);
        renderQueues(queues.body, list.queues, list.sharded || [], headers.length);
        renderChart(chart, history.days);
      },
    };
  }

  function throughputOf(queue, now) {
    const previous = app.samples.get(queue.name);
    app.samples.set(queue.name, { processed: queue.processed, at: now });
    if (!previous || queue.processed < previous.processed || now <= previous.at) return null;
    return (queue.processed - previous.processed) / ((now - previous.at) / 1000);
  }

  // The queues, each sharded queue's row of sums (its shards' and the plain queue's of its name)
  // where its name sorts, its shards right below it; the throughput adds up the rows of sums,
  // not their shards again.
  function renderQueues(body, queues, sharded, columns) {
    body.replaceChildren();
    if (queues.length === 0 && sharded.length === 0) emptyRow(body, columns, 'No queues yet.');
    const now = Date.now();
    let total = 0;
    let known = false;
    const groupOf = new Map();
    for (const s of sharded) s.shards.concat(s.draining || []).forEach((shard) => groupOf.set(shard, s));
    const row = (q, logical, memberOf) => {
      const rate = throughputOf(q, now);
      if (rate !== null && !memberOf) { total += rate; known = true; }
      body.append(queueRow(q, rate, logical, memberOf));
    };
    const group = (s) => {
      row(s, s, null);
      for (const q of queues.filter((q) => groupOf.get(q.name) === s)) row(q, null, s);
    };
    let next = 0;
    for (const q of queues) {
      for (; next < sharded.length && sharded[next].name < q.name; next++) group(sharded[next]);
      if (!groupOf.has(q.name)) row(q, null, null);
    }
    sharded.slice(next).forEach(group);
    byId('throughput').textContent = known ? `${total.toFixed(1)} tasks/s` : '';
  }

  // One queue's row; `logical` is the sharded queue it sums (a row without actions, which are
  // the shards' and the queue page's), and a shard (`memberOf` its sharded queue) is marked, a
  // draining one (of the generation before a reshard) as such.
  function queueRow(q, rate, logical, memberOf) {
    const values = {
      size: fmtNumber(q.size), pending: fmtNumber(q.pending), active: fmtNumber(q.active),
      scheduled: fmtNumber(q.scheduled), retry: fmtNumber(q.retry), archived: fmtNumber(q.archived),
      completed: fmtNumber(q.completed), aggregating: fmtNumber(q.aggregating),
      processed: fmtNumber(q.processed), failed: fmtNumber(q.failed),
      throughput: rate === null ? '–' : `${rate.toFixed(1)}/s`,
      paused: q.paused ? 'paused' : 'running', latency: fmtMs(q.latency_ms), memory: fmtBytes(q.memory_usage),
    };
    const old = logical ? (logical.draining || []).length : 0;
    const draining = old ? `, ${old} draining` : '';
    const marked = memberOf && (memberOf.draining || []).includes(q.name) ? ' (draining)' : '';
    const text = logical ? `${q.name} (${logical.shards.length} shards${draining})` : `${q.name}${marked}`;
    const name = h('a', { href: `#/queues/${enc(q.name)}/pending`, text });
    const cells = [h('td', { 'data-field': 'name' }, name)];
    for (const field of QUEUE_FIELDS) {
      const cell = h('td', { 'data-field': field, text: values[field], class: field === 'paused' ? 'text' : 'num' });
      if (field === 'paused' && q.paused) cell.classList.add('warn');
      if (field === 'failed' && q.failed > 0) cell.classList.add('bad');
      cells.push(cell);
    }
    if (writable()) cells.push(h('td', { class: 'actions' }, logical ? [] : queueButtons(q)));
    if (logical) return h('tr', { 'data-sharded': q.name, class: 'sharded' }, cells);
    const attrs = { 'data-queue': q.name, 'data-paused': q.paused ? 'true' : 'false' };
    if (memberOf) Object.assign(attrs, { 'data-shard-of': memberOf.name, class: 'shard' });
    return h('tr', attrs, cells);
  }

  function queueButtons(q) {
    const toggle = q.paused
      ? h('button', { type: 'button', 'data-action': 'unpause', text: 'Unpause',
        onclick: () => act(() => api('POST', `/api/queues/${enc(q.name)}/unpause`)) })
      : h('button', { type: 'button', 'data-action': 'pause', text: 'Pause',
        onclick: () => act(() => api('POST', `/api/queues/${enc(q.name)}/pause`)) });
    const remove = h('button', { type: 'button', class: 'danger', 'data-action': 'delete-queue', text: 'Delete',
      onclick: () => act(() => deleteQueue(q.name)) });
    return [toggle, remove];
  }

  async function deleteQueue(name) {
    if (!window.confirm(`Delete queue "${name}"?`)) return;
    try {
      await api('POST', `/api/queues/${enc(name)}/delete`, { force: false });
    } catch (e) {
      if (e.code !== 'queue_not_empty') throw e;
      if (!window.confirm(`Queue "${name}" still holds tasks. Delete it with all its pending, scheduled, retry and archived tasks?`)) return;
      follow(await api('POST', `/api/queues/${enc(name)}/delete`, { force: true }));
    }
    app.samples.delete(name);
  }

  Object.assign(d, { evictionBanner, showEvictionRisks, overviewView, queueButtons });
})();
