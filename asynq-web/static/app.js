// The asynq dashboard: a small single-page app over the JSON API under /api/.
// Plain JavaScript, no framework: each view builds its skeleton once when the route changes
// and fills its tables on every refresh, so selections, the search box and focus survive the
// live updates. Nothing from the server is ever parsed as HTML.
'use strict';

(() => {
  // Go's seven states, then our workflow tasks waiting for the tasks they depend on.
  const STATES = ['pending', 'active', 'scheduled', 'retry', 'archived', 'completed', 'aggregating', 'waiting'];
  // Which per-task actions each state allows (the broker refuses the others).
  const ROW_ACTIONS = {
    pending: ['archive', 'delete'],
    active: ['cancel'],
    scheduled: ['run', 'archive', 'delete'],
    retry: ['run', 'archive', 'delete'],
    archived: ['run', 'delete'],
    completed: ['run', 'archive', 'delete'],
    aggregating: ['run', 'archive', 'delete'],
    // A workflow task waiting for others is left to its workflow: cancel that instead.
    waiting: [],
  };
  // Which bulk actions apply to every task of a state (Go asynq's runall/archiveall/deleteall).
  const BULK_ALL = {
    pending: ['archive', 'delete'],
    active: [],
    scheduled: ['run', 'archive', 'delete'],
    retry: ['run', 'archive', 'delete'],
    archived: ['run', 'delete'],
    completed: ['delete'],
    aggregating: [],
    waiting: [],
  };
  // The most task IDs one batch request names (the API's limit).
  const MAX_BATCH = 1000;
  const QUEUE_FIELDS = ['size', 'pending', 'active', 'scheduled', 'retry', 'archived', 'completed',
    'aggregating', 'processed', 'failed', 'throughput', 'paused', 'latency', 'memory'];

  const app = {
    session: null,
    timer: null,
    refreshing: false,
    view: null,
    // Per queue: { processed, at } of the previous refresh, for throughput.
    samples: new Map(),
    errorFromRefresh: false,
  };

  // ---- DOM helpers -------------------------------------------------------------------------

  function h(tag, props, children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'text') node.textContent = value;
      else if (key === 'class') node.className = value;
      else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? '' : String(value));
    }
    for (const child of [].concat(children === undefined ? [] : children)) {
      if (child !== null && child !== undefined) node.append(child);
    }
    return node;
  }

  const byId = (id) => document.getElementById(id);

  function svg(tag, attrs, children) {
    const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    for (const child of [].concat(children || [])) node.append(child);
    return node;
  }

  function table(id, headers, extraClass) {
    const body = h('tbody');
    const tableNode = h('table', { id, class: extraClass }, [
      h('thead', {}, h('tr', {}, headers.map((x) => (typeof x === 'string' ? h('th', { scope: 'col', text: x }) : x)))),
      body,
    ]);
    return { node: h('div', { class: 'table-wrap' }, tableNode), body };
  }

  // The header of a table's Actions column, which stays in sight at the right edge of its
  // scrolling box on a narrow screen (see app.css).
  const actionsHeader = () => h('th', { scope: 'col', class: 'actions', text: 'Actions' });

  function emptyRow(body, columns, text) {
    body.append(h('tr', { class: 'empty' }, h('td', { colspan: columns, text })));
  }

  // ---- Formatting --------------------------------------------------------------------------

  const fmtNumber = (n) => (typeof n === 'number' ? n.toLocaleString() : '–');

  function fmtBytes(n) {
    if (typeof n !== 'number') return '–';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
    return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
  }

  function fmtMs(ms) {
    if (typeof ms !== 'number') return '–';
    if (ms < 1000) return `${ms} ms`;
    const s = ms / 1000;
    if (s < 60) return `${s.toFixed(1)} s`;
    if (s < 3600) return `${(s / 60).toFixed(1)} min`;
    return `${(s / 3600).toFixed(1)} h`;
  }

  // Times are shown in the browser's time zone, always named (`UTC`, `GMT+1`, `PST`).
  function fmtTime(iso) {
    if (!iso) return '–';
    const date = new Date(iso);
    return Number.isNaN(date.getTime()) ? iso : date.toLocaleString(undefined, { timeZoneName: 'short' });
  }

  // `12.0 s ago`, `in 29.8 min`: a time relative to now, for table cells that must stay narrow.
  function fmtRelative(iso) {
    const ms = new Date(iso).getTime() - Date.now();
    if (Number.isNaN(ms)) return iso;
    return ms >= 0 ? `in ${fmtMs(ms)}` : `${fmtMs(-ms)} ago`;
  }

  // A table cell showing a time relative to now; the time itself, zone named, on hover.
  function timeCell(field, iso) {
    return h('td', { 'data-field': field },
      iso ? h('time', { datetime: iso, title: fmtTime(iso), text: fmtRelative(iso) }) : '–');
  }

  // The columns of a state's task list after ID, type and payload: what matters in that state.
  const retriedCell = (t) => h('td', { 'data-field': 'retried', class: 'num', text: `${t.retried}/${t.max_retry}` });
  const errorCell = (t) => h('td', { 'data-field': 'last_error', class: 'error-text', text: t.last_error || '' });
  const failedAtCell = (t) => timeCell('last_failed_at', t.last_failed_at);
  // A task's priority within its queue; the default, 0, is muted.
  const priorityCell = (t) => h('td', { 'data-field': 'priority', class: t.priority === 0 ? 'num muted' : 'num',
    text: String(t.priority), title: 'Priority within the queue: higher runs first; 0 is the default' });
  // A link to the workflow a task belongs to.
  const workflowLink = (id) => h('a', { class: 'mono', href: `#/workflows/${enc(id)}`, text: id });
  const workflowCell = (t) => h('td', { 'data-field': 'workflow' }, t.workflow ? workflowLink(t.workflow) : '–');
  const STATE_COLUMNS = {
    active: [
      ['Started', (t) => timeCell('started', t.worker && t.worker.started)],
      ['Deadline', (t) => timeCell('deadline', t.worker ? t.worker.deadline : t.deadline)],
      ['Worker', (t) => h('td', { 'data-field': 'worker', class: 'mono', text: t.worker ? t.worker.server : '–',
        title: t.worker ? `${t.worker.server} (server ${t.worker.server_id})` : null })],
      ['Progress', (t) => progressCell(t.progress)],
    ],
    // The Priority column is hidden while every listed task has the default priority.
    pending: [['Priority', priorityCell], ['Retried', retriedCell], ['Last error', errorCell]],
    scheduled: [['Due', (t) => timeCell('next_process_at', t.next_process_at)], ['Retried', retriedCell]],
    retry: [['Next attempt', (t) => timeCell('next_process_at', t.next_process_at)], ['Retried', retriedCell],
      ['Failed at', failedAtCell], ['Last error', errorCell]],
    archived: [['Failed at', failedAtCell], ['Last error', errorCell], ['Retried', retriedCell]],
    completed: [['Completed at', (t) => timeCell('completed_at', t.completed_at)],
      ['Result', (t) => h('td', { 'data-field': 'result', class: 'mono payload', text: t.result_preview || '–' })]],
    aggregating: [['Group', (t) => h('td', { 'data-field': 'group', text: t.group || '–' })], ['Retried', retriedCell]],
    // A waiting task takes no action of its own: its workflow's page can cancel it.
    waiting: [['Workflow', workflowCell], ['Retried', retriedCell]],
  };

  // `42% resizing`: a handler's last progress report.
  function progressText(progress) {
    const percent = `${Math.round(progress.fraction * 100)}%`;
    return progress.message ? `${percent} ${progress.message}` : percent;
  }

  // A progress bar with its text, or a dash for a task that reported none.
  function progressCell(progress) {
    if (!progress) return h('td', { 'data-field': 'progress', class: 'muted', text: '–' });
    return h('td', { 'data-field': 'progress', title: `reported ${fmtTime(progress.reported_at)}` }, [
      h('progress', { max: 1, value: progress.fraction }), ' ', h('span', { text: progressText(progress) }),
    ]);
  }

  const enc = encodeURIComponent;

  // ---- API ---------------------------------------------------------------------------------

  class ApiFailure extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  async function api(method, path, body) {
    const headers = { Accept: 'application/json' };
    const init = { method, headers, credentials: 'same-origin', cache: 'no-store' };
    if (method !== 'GET') {
      headers['X-CSRF-Token'] = app.session ? app.session.csrf_token : '';
      if (body !== undefined) {
        headers['Content-Type'] = 'application/json';
        init.body = JSON.stringify(body);
      }
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (e) {
      throw new ApiFailure(0, 'network', `cannot reach the dashboard server (${e.message})`);
    }
    if (response.status === 204) return null;
    let data = null;
    try { data = await response.json(); } catch (_) { data = null; }
    if (!response.ok) {
      const error = data && data.error ? data.error : { code: 'http_' + response.status, message: response.statusText };
      if (response.status === 401 && path !== '/api/login') showLogin();
      throw new ApiFailure(response.status, error.code, error.message);
    }
    return data;
  }

  function showError(message, fromRefresh) {
    const box = byId('error');
    box.textContent = message;
    box.hidden = false;
    app.errorFromRefresh = Boolean(fromRefresh);
  }

  function clearError(onlyRefreshErrors) {
    if (onlyRefreshErrors && !app.errorFromRefresh) return;
    const box = byId('error');
    box.textContent = '';
    box.hidden = true;
  }

  // Runs a user action, reports its failure, and refreshes the view after it.
  async function act(work) {
    clearError(false);
    try {
      await work();
    } catch (e) {
      if (e instanceof ApiFailure && e.status === 401) return;
      showError(e.message, false);
    }
    await refresh();
  }

  const writable = () => app.session && !app.session.read_only;

  // ---- Bulk actions that outlast their request -----------------------------------------------
  // A bulk action answered with 202 goes on as a job; its progress is shown until it ends.

  const jobs = new Map();
  let jobTimer = null;

  function showJobs() {
    const box = byId('jobs');
    box.replaceChildren(...[...jobs.values()].map((job) => h('div', { 'data-job': String(job.id) },
      [`${cap(job.description)}: ${fmtNumber(job.done)} of ${fmtNumber(job.total)} tasks…`])));
    box.hidden = jobs.size === 0;
  }

  // What an archive would drop from the archive (GET .../archive-outlook at `url`), as a
  // sentence for its confirmation; '' when it drops nothing.
  async function archiveWarning(url) {
    let o;
    try {
      o = await api('GET', url);
    } catch (e) {
      if (e instanceof ApiFailure && e.status === 501) return '\n\nThe broker cannot tell what the archive\'s limits would drop.';
      throw e;
    }
    if (o.dropped === 0) return '';
    return `\n\nThis drops ${fmtNumber(o.dropped)} archived task(s): the archive keeps at most ` +
      `${fmtNumber(o.max_size - 1)} tasks (${fmtNumber(o.over_size)} over that) for less than ` +
      `${fmtAge(o.max_age_secs)} (${fmtNumber(o.expired)} older).`;
  }

  function fmtAge(secs) {
    for (const [unit, name] of [[86400, 'day'], [3600, 'hour'], [60, 'minute'], [1, 'second']]) {
      if (secs % unit === 0) return `${fmtNumber(secs / unit)} ${name}${secs === unit ? '' : 's'}`;
    }
    return `${secs} seconds`;
  }

  // Says what an archive's trims dropped, when they dropped anything.
  function reportTrimmed(trimmed) {
    if (!trimmed || trimmed.total === 0) return;
    showError(`The archive's limits dropped ${fmtNumber(trimmed.total)} archived task(s): ` +
      `${fmtNumber(trimmed.by_size)} over the size limit, ${fmtNumber(trimmed.by_age)} past the age limit.`, false);
  }

  function follow(result) {
    if (result) reportTrimmed(result.trimmed);
    if (!result || !result.job) return;
    jobs.set(result.job.id, result.job);
    showJobs();
    if (!jobTimer) jobTimer = window.setInterval(pollJobs, 1000);
  }

  async function pollJobs() {
    for (const id of [...jobs.keys()]) {
      let job;
      try {
        job = await api('GET', `/api/jobs/${id}`);
      } catch (e) {
        if (e.status === 0 || e.status === 503) continue;
        jobs.delete(id);
        continue;
      }
      if (job.state === 'running') {
        jobs.set(id, job);
        continue;
      }
      jobs.delete(id);
      if (job.state === 'failed') showError(`${cap(job.description)} failed: ${job.error.message}`, false);
      if (job.state === 'done') reportTrimmed(job.trimmed);
      await refresh();
    }
    showJobs();
    if (jobs.size === 0 && jobTimer) {
      window.clearInterval(jobTimer);
      jobTimer = null;
    }
  }

  async function resumeJobs() {
    try {
      const { jobs: all } = await api('GET', '/api/jobs');
      for (const job of all) if (job.state === 'running') follow({ job });
    } catch (_) { /* shown by the next refresh */ }
  }

  // ---- Login and session -------------------------------------------------------------------

  function showLogin() {
    stopTimer();
    byId('login').hidden = false;
    byId('view').hidden = true;
    byId('logout').hidden = true;
    byId('last-updated').textContent = 'Not logged in';
    byId('login-token').focus();
  }

  async function loadSession() {
    app.session = await api('GET', '/api/session');
    byId('read-only-badge').hidden = !app.session.read_only;
    byId('logout').hidden = !(app.session.auth_required && app.session.authenticated);
    return app.session;
  }

  async function onLogin(event) {
    event.preventDefault();
    const input = byId('login-token');
    clearError(false);
    try {
      await api('POST', '/api/login', { token: input.value });
      input.value = '';
      await start();
    } catch (e) {
      showError(e.code === 'invalid_token' ? 'Wrong token.' : e.message, false);
    }
  }

  async function onLogout() {
    try { await api('POST', '/api/logout'); } catch (_) { /* the session is gone either way */ }
    await loadSession();
    showLogin();
  }

  // ---- Routing -----------------------------------------------------------------------------

  function parseRoute() {
    const parts = location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
    if (parts[0] === 'queues' && parts.length === 4 && parts[2] === 'tasks') {
      return { name: 'task', queue: parts[1], id: parts[3] };
    }
    if (parts[0] === 'queues' && parts.length >= 2) {
      const state = STATES.includes(parts[2]) ? parts[2] : 'pending';
      return { name: 'queue', queue: parts[1], state };
    }
    if (parts[0] === 'workflows') return parts.length >= 2 ? { name: 'workflow', id: parts[1] } : { name: 'workflows' };
    if (parts[0] === 'slots') return { name: 'slots', key: parts[1] || '' };
    if (['servers', 'schedulers', 'redis'].includes(parts[0])) return { name: parts[0] };
    if (extraViews.has(parts[0])) return { name: parts[0], parts: parts.slice(1) };
    return { name: 'overview' };
  }

  function mount() {
    const route = parseRoute();
    const views = { overview: overviewView, queue: queueView, task: taskView, workflows: workflowsView,
      workflow: workflowView, servers: serversView, slots: slotsView, schedulers: schedulersView, redis: redisView };
    // The section of the navigation each page belongs to.
    const sections = { queue: 'overview', task: 'overview', workflow: 'workflows' };
    const container = byId('view');
    container.replaceChildren();
    app.view = (views[route.name] || extraViews.get(route.name))(route, container);
    for (const link of document.querySelectorAll('#nav a')) {
      const current = link.dataset.nav === (sections[route.name] || route.name);
      if (current) link.setAttribute('aria-current', 'page'); else link.removeAttribute('aria-current');
    }
    refresh();
  }

  async function refresh() {
    if (!app.view || app.refreshing) return;
    app.refreshing = true;
    const view = app.view;
    try {
      await view.update();
      if (view === app.view) {
        clearError(true);
        const now = new Date();
        const stamp = byId('last-updated');
        stamp.textContent = `Updated ${now.toLocaleTimeString(undefined, { timeZoneName: 'short' })}`;
        stamp.setAttribute('data-time', now.toISOString());
      }
    } catch (e) {
      if (!(e instanceof ApiFailure && e.status === 401)) showError(e.message, true);
    } finally {
      app.refreshing = false;
    }
  }

  function startTimer() {
    stopTimer();
    const interval = Math.max(1000, (app.session && app.session.refresh_ms) || 5000);
    app.timer = setInterval(() => { if (!document.hidden) refresh(); }, interval);
  }

  function stopTimer() {
    if (app.timer) clearInterval(app.timer);
    app.timer = null;
  }

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
        renderQueues(queues.body, list.queues, headers.length);
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

  function renderQueues(body, queues, columns) {
    body.replaceChildren();
    if (queues.length === 0) emptyRow(body, columns, 'No queues yet.');
    const now = Date.now();
    let total = 0;
    let known = false;
    for (const q of queues) {
      const rate = throughputOf(q, now);
      if (rate !== null) { total += rate; known = true; }
      const values = {
        size: fmtNumber(q.size), pending: fmtNumber(q.pending), active: fmtNumber(q.active),
        scheduled: fmtNumber(q.scheduled), retry: fmtNumber(q.retry), archived: fmtNumber(q.archived),
        completed: fmtNumber(q.completed), aggregating: fmtNumber(q.aggregating),
        processed: fmtNumber(q.processed), failed: fmtNumber(q.failed),
        throughput: rate === null ? '–' : `${rate.toFixed(1)}/s`,
        paused: q.paused ? 'paused' : 'running', latency: fmtMs(q.latency_ms), memory: fmtBytes(q.memory_usage),
      };
      const cells = [h('td', { 'data-field': 'name' }, h('a', { href: `#/queues/${enc(q.name)}/pending`, text: q.name }))];
      for (const field of QUEUE_FIELDS) {
        const cell = h('td', { 'data-field': field, text: values[field], class: field === 'paused' ? 'text' : 'num' });
        if (field === 'paused' && q.paused) cell.classList.add('warn');
        if (field === 'failed' && q.failed > 0) cell.classList.add('bad');
        cells.push(cell);
      }
      if (writable()) cells.push(h('td', { class: 'actions' }, queueButtons(q)));
      body.append(h('tr', { 'data-queue': q.name, 'data-paused': q.paused ? 'true' : 'false' }, cells));
    }
    byId('throughput').textContent = known ? `${total.toFixed(1)} tasks/s` : '';
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

  // The top of a chart's value axis: `max` rounded up to 1, 2 or 5 times a power of ten, so
  // that its label is short; 1 when every value is 0.
  function niceMax(max) {
    if (!(max > 0)) return 1;
    const power = 10 ** Math.floor(Math.log10(max));
    const step = [1, 2, 5, 10].find((f) => max <= f * power * (1 + 1e-9));
    return step * power;
  }

  // How wide `text` is in the charts' tick font (11 px in the chart's own units, the page's
  // font family), for the room its axis leaves it.
  const tickMeasure = document.createElement('canvas').getContext('2d');
  function tickWidth(text) {
    tickMeasure.font = `11px ${getComputedStyle(document.documentElement).fontFamily}`;
    return Math.ceil(tickMeasure.measureText(text).width * 1.1) + 2;
  }

  // The left edge of a chart's plot: room for the widest of its value labels and their gap.
  const axisRoom = (labels) => Math.max(24, ...labels.map(tickWidth)) + 8;

  // A rate per second, short: `0.04`, `2.5`, `120`.
  const fmtRate = (v) => (v >= 100 ? v.toFixed(0) : v >= 1 ? String(Number(v.toFixed(1))) : String(Number(v.toPrecision(2))));

  // A line chart of `points` (each with `at` and a value per series key) over time: one
  // polyline per series, the axis from zero to a round value above the largest, labelled in
  // the room their text takes, a legend below. Points whose value is null break nothing: the
  // line skips them.
  function lineChart(container, points, series, format) {
    const width = 420;
    const height = 160;
    const times = points.map((p) => new Date(p.at).getTime());
    const [t0, t1] = [Math.min(...times), Math.max(...times)];
    const max = niceMax(Math.max(0, ...points.flatMap((p) => series.map((s) => p[s.key] || 0))));
    const [top, bottom] = [format(max), format(0)];
    const pad = { left: axisRoom([top, bottom]), right: 8, top: 10, bottom: 22 };
    const plotW = width - pad.left - pad.right;
    const plotH = height - pad.top - pad.bottom;
    const x = (t) => pad.left + (t1 > t0 ? ((t - t0) / (t1 - t0)) * plotW : plotW);
    const y = (v) => pad.top + plotH - (v / max) * plotH;
    const nodes = [
      svg('line', { x1: pad.left, y1: pad.top + plotH, x2: width - pad.right, y2: pad.top + plotH, class: 'axis' }),
      svg('text', { x: pad.left - 6, y: pad.top + 10, class: 'tick', 'text-anchor': 'end' }, [document.createTextNode(top)]),
      svg('text', { x: pad.left - 6, y: pad.top + plotH, class: 'tick', 'text-anchor': 'end' }, [document.createTextNode(bottom)]),
    ];
    for (const s of series) {
      const coords = points.filter((p) => typeof p[s.key] === 'number')
        .map((p) => `${x(new Date(p.at).getTime()).toFixed(1)},${y(p[s.key]).toFixed(1)}`);
      if (coords.length === 0) continue;
      nodes.push(svg('polyline', { points: coords.join(' '), class: `line line-${s.key}`, 'data-series': s.key }));
      // The latest value, marked: a lone sample is a dot.
      const [cx, cy] = coords[coords.length - 1].split(',');
      nodes.push(svg('circle', { cx, cy, r: 2.5, class: `dot line-${s.key}` }));
    }
    const legend = h('div', { class: 'legend' }, series.map((s) => h('span', { class: `key line-${s.key}`, text: s.label })));
    container.replaceChildren(svg('svg', { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: 'xMidYMid meet' }, nodes), legend);
  }

  function renderChart(container, days) {
    const width = 640;
    const height = 220;
    const max = niceMax(Math.max(1, ...days.map((d) => Math.max(d.processed, d.failed))));
    // The dates below the bars are centred on them: the last one needs half its width.
    const pad = { left: axisRoom([fmtNumber(max), '0']), right: Math.max(12, tickWidth('12-31') / 2), top: 12, bottom: 36 };
    const plotW = width - pad.left - pad.right;
    const plotH = height - pad.top - pad.bottom;
    const slot = plotW / Math.max(1, days.length);
    const bar = Math.max(1, Math.min(24, (slot - 4) / 2));
    const y = (v) => pad.top + plotH - (v / max) * plotH;
    const nodes = [
      svg('line', { x1: pad.left, y1: pad.top + plotH, x2: width - pad.right, y2: pad.top + plotH, class: 'axis' }),
      svg('text', { x: pad.left - 6, y: pad.top + 10, class: 'tick', 'text-anchor': 'end' }, [document.createTextNode(fmtNumber(max))]),
      svg('text', { x: pad.left - 6, y: pad.top + plotH, class: 'tick', 'text-anchor': 'end' }, [document.createTextNode('0')]),
    ];
    const labelEvery = Math.ceil(days.length / 10);
    days.forEach((d, i) => {
      const x = pad.left + i * slot + (slot - 2 * bar) / 2;
      for (const [kind, value, offset] of [['processed', d.processed, 0], ['failed', d.failed, bar]]) {
        const rect = svg('rect', { x: x + offset, y: y(value), width: bar, height: pad.top + plotH - y(value),
          class: `bar-${kind}`, 'data-date': d.date, 'data-kind': kind, 'data-value': value });
        rect.append(svg('title', {}, [document.createTextNode(`${d.date}: ${fmtNumber(value)} ${kind}`)]));
        nodes.push(rect);
      }
      if (i % labelEvery === 0) {
        nodes.push(svg('text', { x: x + bar, y: height - pad.bottom + 16, class: 'tick', 'text-anchor': 'middle' },
          [document.createTextNode(d.date.slice(5))]));
      }
    });
    const legend = h('div', { class: 'legend' }, [
      h('span', { class: 'swatch processed', text: 'processed' }), h('span', { class: 'swatch failed', text: 'failed' })]);
    container.replaceChildren(svg('svg', { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: 'xMidYMid meet',
      'data-days': days.length }, nodes), legend);
  }

  // ---- A queue -----------------------------------------------------------------------------

  function queueView(route, container) {
    const { queue, state } = route;
    // `search` is the search shown, if any: its text, what it found so far and where it stands.
    const local = { page: 1, size: 20, pages: 1, search: null, selected: new Set(), hasNext: false, ids: [] };
    const tabs = h('nav', { class: 'tabs', 'aria-label': 'Task states' }, STATES.map((s) =>
      h('a', { href: `#/queues/${enc(queue)}/${s}`, 'data-state': s, class: s === state ? 'active' : null,
        'aria-current': s === state ? 'page' : null }, [s, ' ', h('span', { class: 'count', 'data-count': s })])));
    const search = h('input', { id: 'search', type: 'search', placeholder: 'Search ID, type, payload, result; or field=value',
      'aria-label': 'Search the tasks: text in their ID, type, payload or result, or field=value in a JSON payload',
      title: 'Terms separated by spaces, all of which must match: text (or "two words") in a task\'s ID, type, payload '
        + 'or result, or field=value for a field of a JSON payload (a.b=value looks inside; field="two words")',
      autocomplete: 'off', spellcheck: 'false' });
    let debounce = null;
    search.addEventListener('input', () => {
      clearTimeout(debounce);
      debounce = setTimeout(() => startSearch(search.value.trim()), 400);
    });
    search.addEventListener('keydown', (event) => {
      if (event.key !== 'Enter') return;
      clearTimeout(debounce);
      startSearch(search.value.trim(), true);
    });
    const searchProgress = h('p', { id: 'search-progress', class: 'muted', hidden: true, 'aria-live': 'polite' });
    const sizeSelect = h('select', { id: 'page-size', 'aria-label': 'Tasks per page' },
      [10, 20, 50, 100].map((n) => h('option', { value: n, text: `${n} per page`, selected: n === local.size })));
    sizeSelect.addEventListener('change', () => { local.size = Number(sizeSelect.value); turn(1); });
    const selectAll = h('input', { type: 'checkbox', id: 'select-all', 'aria-label': 'Select every task on this page' });
    selectAll.addEventListener('change', () => {
      for (const id of local.ids) { if (selectAll.checked) local.selected.add(id); else local.selected.delete(id); }
      for (const box of document.querySelectorAll('#tasks input[data-select]')) box.checked = selectAll.checked;
      syncBulk();
    });
    const columns = STATE_COLUMNS[state];
    // Whether the tasks of this state take actions here (a waiting task's are its workflow's).
    const actionable = writable() && ROW_ACTIONS[state].length > 0;
    const headers = [h('th', { scope: 'col', class: 'select' }, actionable ? selectAll : null),
      'ID', 'Type', 'Payload', ...columns.map(([title]) => h('th', { scope: 'col', 'data-column': title.toLowerCase(), text: title }))];
    if (actionable) headers.push(actionsHeader());
    const tasks = table('tasks', headers);
    const tasksTable = tasks.node.querySelector('table');
    const bulkButtons = [];
    // Each bulk action on every task of the state, with its button: while a search is shown, it
    // acts on the tasks the search found instead.
    const bulkAllButtons = [];
    const toolbar = h('div', { class: 'toolbar' }, [search, sizeSelect]);
    if (writable()) {
      for (const action of ['run', 'archive', 'delete']) {
        if (!ROW_ACTIONS[state].includes(action)) continue;
        const button = h('button', { type: 'button', 'data-bulk': action, disabled: true, class: action === 'delete' ? 'danger' : null,
          text: `${cap(action)} selected`, onclick: () => act(() => batch(action)) });
        bulkButtons.push(button);
        toolbar.append(button);
      }
      for (const action of BULK_ALL[state]) {
        const button = h('button', { type: 'button', 'data-bulk-all': action, class: action === 'delete' ? 'danger' : null,
          text: `${cap(action)} all`, onclick: () => act(() => (local.search ? bulkMatches(action) : bulkAll(action))) });
        bulkAllButtons.push([action, button]);
        toolbar.append(button);
      }
    }
    const pageInfo = h('span', { id: 'page-info', class: 'muted' });
    // Goes to page `page` of the list (or of the search's matches) and shows it.
    const turn = (page) => { local.page = page; if (local.search) renderMatches(); else refresh(); };
    const first = h('button', { type: 'button', id: 'first-page', text: '« First', title: 'The first page', disabled: true,
      onclick: () => { if (local.page > 1) turn(1); } });
    const prev = h('button', { type: 'button', id: 'prev-page', text: '‹ Previous', disabled: true,
      onclick: () => { if (local.page > 1) turn(local.page - 1); } });
    const next = h('button', { type: 'button', id: 'next-page', text: 'Next ›', disabled: true,
      onclick: () => { if (local.hasNext) turn(local.page + 1); } });
    const last = h('button', { type: 'button', id: 'last-page', text: 'Last »', title: 'The last page', disabled: true,
      onclick: () => { if (local.page < local.pages) turn(local.pages); } });
    const groupsList = h('ul', { id: 'groups', class: 'groups' });
    const summary = h('div', { id: 'queue-summary', class: 'summary' });
    const charts = ['sizes', 'throughput', 'latency'].map((name) => h('div', { id: `series-${name}`, class: 'chart', role: 'img' }));
    const seriesNote = h('p', { id: 'series-note', class: 'muted' });
    const pauseSlot = h('span', { class: 'actions' });
    const eventsList = h('ol', { id: 'queue-events', class: 'events' });
    const eventsPanel = h('section', { id: 'events-panel', class: 'panel', hidden: true }, [
      h('h2', {}, ['Live events ', h('span', { class: 'badge', text: 'live' })]),
      h('p', { class: 'muted', text: 'From the queue\'s event log: the page refreshes as each event arrives.' }),
      eventsList,
    ]);
    container.append(h('section', { class: 'panel' }, [
      h('div', { class: 'panel-head' }, [h('h1', {}, [h('a', { href: '#/', text: 'Queues' }), ' / ', h('span', { id: 'queue-name', text: queue })]), pauseSlot]),
      summary, tabs,
      state === 'aggregating' ? h('div', {}, [h('h2', { text: 'Groups' }), groupsList]) : null,
      state === 'waiting' ? h('p', { id: 'waiting-note', class: 'muted', text: 'Workflow tasks waiting for the tasks they depend on: '
        + 'each is released once they have all settled. They take no action here; cancel their workflow on its page instead.' }) : null,
      toolbar, searchProgress, tasks.node,
      h('div', { class: 'pager' }, [first, prev, pageInfo, next, last]),
    ]), h('section', { class: 'panel' }, [
      h('h2', { text: 'Last hour' }), seriesNote,
      h('div', { class: 'series' }, [
        h('figure', {}, [h('figcaption', { text: 'Tasks by state' }), charts[0]]),
        h('figure', {}, [h('figcaption', { text: 'Processed and failed per second' }), charts[1]]),
        h('figure', {}, [h('figcaption', { text: 'Latency' }), charts[2]]),
      ]),
    ]), eventsPanel);

    function renderSeries(series) {
      const points = series.samples;
      seriesNote.textContent = points.length < 2
        ? `Sampled every ${series.interval_seconds} s since the dashboard started; the charts fill in as samples come.`
        : `${points.length} samples, every ${series.interval_seconds} s, since ${fmtTime(points[0].at)}.`;
      if (points.length === 0) { for (const chart of charts) chart.replaceChildren(); return; }
      lineChart(charts[0], points, ['active', 'pending', 'scheduled', 'retry', 'archived', 'aggregating', 'waiting']
        .map((key) => ({ key, label: key })), fmtNumber);
      lineChart(charts[1], points, [{ key: 'processed_per_second', label: 'processed/s' }, { key: 'failed_per_second', label: 'failed/s' }],
        fmtRate);
      lineChart(charts[2], points, [{ key: 'latency_ms', label: 'latency' }], fmtMs);
    }

    function syncBulk() {
      for (const button of bulkButtons) button.disabled = local.selected.size === 0;
      selectAll.checked = local.ids.length > 0 && local.ids.every((id) => local.selected.has(id));
    }

    async function batch(action) {
      const ids = [...local.selected];
      if (ids.length === 0) return;
      if (action === 'delete' && !window.confirm(`Delete ${ids.length} task(s)?`)) return;
      if (action === 'archive') {
        const warning = await archiveWarning(`/api/queues/${enc(queue)}/archive-outlook?adding=${ids.length}`);
        if (warning && !window.confirm(`Archive ${ids.length} task(s)?${warning}`)) return;
      }
      const result = await api('POST', `/api/queues/${enc(queue)}/batch`, { action, ids });
      local.selected.clear();
      reportTrimmed(result.trimmed);
      forgetMatches(result.succeeded);
      if (result.failed.length > 0) {
        throw new Error(`${result.failed.length} of ${ids.length} task(s) failed: ${result.failed[0].message}`);
      }
    }

    async function bulkAll(action) {
      const warning = action === 'archive'
        ? await archiveWarning(`/api/queues/${enc(queue)}/states/${state}/archive-outlook`) : '';
      if (!window.confirm(`${cap(action)} every ${state} task in queue "${queue}"?${warning}`)) return;
      follow(await api('POST', `/api/queues/${enc(queue)}/states/${state}/bulk`, { action }));
      local.selected.clear();
    }

    function rowActions(task) {
      return ROW_ACTIONS[state].map((action) => h('button', { type: 'button', 'data-action': action,
        class: action === 'delete' || action === 'cancel' ? 'danger' : null, text: cap(action),
        onclick: () => act(async () => {
          await api('POST', `/api/queues/${enc(queue)}/tasks/${enc(task.id)}/${action}`);
          if (action !== 'cancel') forgetMatches([task.id]);
        }) }));
    }

    // ---- Search: every task of the state, looked through a step at a time (see the API's
    // search step), the matches kept here and shown a page at a time.

    // The most matches a search keeps; past them it stops and asks for a narrower search.
    const MAX_MATCHES = 5000;

    // Shows `text`'s search (none when it is empty) from its start; the search shown already
    // goes on unless `again`.
    function startSearch(text, again) {
      if (!again && (local.search ? local.search.text : '') === text) return;
      local.search = text ? { text, matches: [], seen: new Set(), cursor: null, scanned: 0, total: 0, done: false, capped: false } : null;
      local.selected.clear();
      local.page = 1;
      if (local.search) {
        searchSteps(local.search);
        renderMatches();
      } else {
        searchProgress.hidden = true;
        syncBulkAll();
        refresh();
      }
    }

    // Runs the steps of search `run` one after the other until the state was looked through
    // (or the search was replaced, or the page left), showing each step's progress.
    async function searchSteps(run) {
      try {
        do {
          const params = new URLSearchParams({ q: run.text });
          if (run.cursor) params.set('cursor', run.cursor);
          const step = await api('GET', `/api/queues/${enc(queue)}/states/${state}/search?${params}`);
          if (local.search !== run || app.view !== self) return;
          for (const task of step.matches) {
            if (run.seen.has(task.id)) continue;
            run.seen.add(task.id);
            run.matches.push(task);
          }
          run.scanned += step.scanned;
          run.total = step.total;
          run.cursor = step.cursor;
          if (run.matches.length >= MAX_MATCHES) { run.capped = true; break; }
          if (run.cursor) renderMatches();
        } while (run.cursor);
      } catch (e) {
        if (local.search !== run) return;
        run.failed = e.message;
        showError(`The search failed: ${e.message}`, false);
      }
      run.done = true;
      if (local.search === run && app.view === self) renderMatches();
    }

    // Forgets the matches the operator acted on (they left the state).
    function forgetMatches(ids) {
      const run = local.search;
      if (!run || ids.length === 0) return;
      const gone = new Set(ids);
      run.matches = run.matches.filter((t) => !gone.has(t.id));
    }

    // What the search shown has done so far, in words.
    function searchText(run) {
      const matches = `${fmtNumber(run.matches.length)} match${run.matches.length === 1 ? '' : 'es'}`;
      if (run.failed) return `The search stopped after ${fmtNumber(run.scanned)} tasks: ${run.failed}. ${matches} so far.`;
      if (run.capped) return `Stopped at ${matches} after ${fmtNumber(run.scanned)} tasks: narrow the search.`;
      if (!run.done) return `Searching… ${fmtNumber(run.scanned)} of ${fmtNumber(run.total)} task(s) looked at, ${matches}.`;
      return `Searched all ${fmtNumber(run.scanned)} ${state} task(s): ${matches}. Bulk actions act on these only.`;
    }

    // Shows the page of the search's matches, and its progress.
    function renderMatches() {
      const run = local.search;
      searchProgress.hidden = false;
      searchProgress.textContent = searchText(run);
      searchProgress.dataset.done = String(run.done);
      searchProgress.dataset.matches = String(run.matches.length);
      const pages = Math.max(1, Math.ceil(run.matches.length / local.size));
      local.page = Math.min(local.page, pages);
      const start = (local.page - 1) * local.size;
      showRows(run.matches.slice(start, start + local.size), run.matches.length, start + local.size < run.matches.length,
        run.done ? 'No task matches.' : 'Searching…', ' matching');
      syncBulkAll();
    }

    // The bulk-action buttons say what they act on: every task of the state, or the matches.
    function syncBulkAll() {
      const run = local.search;
      for (const [action, button] of bulkAllButtons) {
        button.textContent = run ? `${cap(action)} ${fmtNumber(run.matches.length)} matching` : `${cap(action)} all`;
        button.dataset.filtered = String(Boolean(run));
        button.disabled = Boolean(run) && (!run.done || run.matches.length === 0);
      }
    }

    // Applies `action` to the tasks the finished search found, through the batch API.
    async function bulkMatches(action) {
      const run = local.search;
      const ids = run.matches.map((t) => t.id);
      if (!run.done || ids.length === 0) return;
      if (!window.confirm(`${cap(action)} the ${ids.length} ${state} task(s) matching "${run.text}" in queue "${queue}"?`)) return;
      const failed = [];
      for (let at = 0; at < ids.length; at += MAX_BATCH) {
        const result = await api('POST', `/api/queues/${enc(queue)}/batch`, { action, ids: ids.slice(at, at + MAX_BATCH) });
        forgetMatches(result.succeeded);
        failed.push(...result.failed);
      }
      local.selected.clear();
      if (failed.length > 0) throw new Error(`${failed.length} of ${ids.length} task(s) failed: ${failed[0].message}`);
    }

    // Shows `list`, a page of `total` tasks (`hasNext` when more follow), in the table.
    function showRows(list, total, hasNext, emptyText, counted) {
      local.ids = list.map((t) => t.id);
      local.hasNext = hasNext;
      tasks.body.replaceChildren();
      if (list.length === 0) emptyRow(tasks.body, headers.length, emptyText);
      for (const task of list) {
        const box = h('input', { type: 'checkbox', 'data-select': task.id, 'aria-label': `Select task ${task.id}`,
          checked: local.selected.has(task.id) });
        box.addEventListener('change', () => {
          if (box.checked) local.selected.add(task.id); else local.selected.delete(task.id);
          syncBulk();
        });
        const cells = [
          h('td', { class: 'select' }, actionable ? box : null),
          h('td', { 'data-field': 'id', class: 'mono' }, h('a', { href: `#/queues/${enc(queue)}/tasks/${enc(task.id)}`, text: task.id })),
          h('td', { 'data-field': 'type', text: task.type }),
          h('td', { 'data-field': 'payload', class: 'mono payload', text: task.payload_preview, title: `${task.payload_size} bytes` }),
          ...columns.map(([, cell]) => cell(task)),
        ];
        if (actionable) cells.push(h('td', { class: 'actions' }, rowActions(task)));
        tasks.body.append(h('tr', { 'data-task-id': task.id, 'data-state': task.state }, cells));
      }
      tasksTable.classList.toggle('default-priorities', list.every((t) => t.priority === 0));
      // Forget selections of tasks no longer listed on this page.
      for (const id of [...local.selected]) if (!local.ids.includes(id)) local.selected.delete(id);
      local.pages = Math.max(1, Math.ceil(total / local.size));
      pageInfo.textContent = `Page ${fmtNumber(local.page)} of ${fmtNumber(local.pages)} · ${fmtNumber(total)} task(s)${counted}`;
      first.disabled = local.page <= 1;
      prev.disabled = local.page <= 1;
      next.disabled = !hasNext;
      last.disabled = local.page >= local.pages;
      syncBulk();
    }

    const self = {
      async update() {
        const params = new URLSearchParams({ page: local.page, size: local.size });
        const run = local.search;
        const [detail, page, groups, series] = await Promise.all([
          api('GET', `/api/queues/${enc(queue)}`),
          run ? Promise.resolve(null) : api('GET', `/api/queues/${enc(queue)}/states/${state}/tasks?${params}`),
          state === 'aggregating' ? api('GET', `/api/queues/${enc(queue)}/groups`) : Promise.resolve(null),
          api('GET', `/api/queues/${enc(queue)}/series`),
        ]);
        renderSeries(series);
        const q = detail.queue;
        for (const s of STATES) {
          const count = tabs.querySelector(`[data-count="${s}"]`);
          count.textContent = fmtNumber(q[s]);
        }
        summary.replaceChildren(
          h('span', { 'data-field': 'paused', class: q.paused ? 'badge warn' : 'badge', text: q.paused ? 'paused' : 'running' }),
          h('span', { text: `size ${fmtNumber(q.size)}` }),
          h('span', { text: `processed today ${fmtNumber(q.processed)}` }),
          h('span', { text: `failed today ${fmtNumber(q.failed)}` }),
          h('span', { text: `latency ${fmtMs(q.latency_ms)}` }),
          h('span', { text: `memory ${fmtBytes(q.memory_usage)}` }),
          // replaceChildren would print a null as the text "null": leave the slot out instead.
          ...(detail.location
            ? [h('span', { 'data-field': 'slot', text: `slot ${detail.location.slot} on ${detail.location.nodes.map((n) => n.addr).join(', ')}` })]
            : []),
        );
        if (writable()) pauseSlot.replaceChildren(...queueButtons(q).slice(0, 1));
        if (run) {
          // The search's matches stay as it found them (less those acted on) until it is run again.
          if (run === local.search) renderMatches();
        } else if (local.search === null) {
          if (page.tasks.length === 0 && local.page > 1 && page.total > 0) {
            local.page = Math.max(1, Math.ceil(page.total / local.size));
            return this.update();
          }
          showRows(page.tasks, page.total, page.has_next, `No ${state} tasks.`, '');
        }
        if (groups) renderGroups(groupsList, queue, groups.groups);
      },
    };
    // Once the view is the app's (its caller installs it on return).
    queueMicrotask(() => followEvents(queue, self, eventsPanel, eventsList));
    return self;
  }

  // Follows a queue's event log while `view` is shown: each read waits up to 10 s for an event,
  // and every batch of events refreshes the page at once (the timer's polling goes on beside it,
  // and is all a queue without a log gets: its log is looked for again every 30 s).
  async function followEvents(queue, view, panel, list) {
    let after = 'latest';
    while (app.view === view) {
      let page;
      try {
        page = await api('GET', `/api/queues/${enc(queue)}/events?after=${enc(after)}&wait_ms=10000`);
      } catch (e) {
        await sleep(5000);
        continue;
      }
      if (app.view !== view) return;
      panel.hidden = page.events_cap === null;
      if (page.events_cap === null) { await sleep(30000); continue; }
      after = page.next;
      if (page.events.length === 0) continue;
      for (const event of page.events) {
        const detail = event.error ? ` error: ${event.error}`
          : event.progress !== null ? ` ${Math.round(event.progress * 100)}% ${event.progress_message}` : '';
        list.prepend(h('li', { 'data-event-kind': event.kind, 'data-task-id': event.task_id }, [
          h('time', { datetime: event.at, text: fmtTime(event.at) }), ' ',
          h('span', { class: `badge event-${event.kind}`, text: event.kind }), ' ',
          h('a', { class: 'mono', href: `#/queues/${enc(queue)}/tasks/${enc(event.task_id)}`, text: event.task_id }),
          ` ${event.task_type}${detail}`,
        ]));
      }
      while (list.children.length > 50) list.lastElementChild.remove();
      refresh();
    }
  }

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  function renderGroups(list, queue, groups) {
    list.replaceChildren();
    if (groups.length === 0) list.append(h('li', { class: 'muted', text: 'No groups.' }));
    for (const g of groups) {
      const buttons = writable() ? ['run', 'archive', 'delete'].map((action) => h('button', { type: 'button',
        'data-group-action': action, class: action === 'delete' ? 'danger' : null, text: cap(action),
        onclick: () => act(async () => {
          const warning = action === 'archive'
            ? await archiveWarning(`/api/queues/${enc(queue)}/groups/${enc(g.group)}/archive-outlook`) : '';
          if (!window.confirm(`${cap(action)} every task of group "${g.group}"?${warning}`)) return;
          follow(await api('POST', `/api/queues/${enc(queue)}/groups/${enc(g.group)}/bulk`, { action }));
        }) })) : [];
      list.append(h('li', { 'data-group': g.group }, [h('span', { class: 'group-name', text: g.group }),
        h('span', { class: 'count', 'data-field': 'size', text: fmtNumber(g.size) }), ...buttons]));
    }
  }

  const cap = (s) => s.charAt(0).toUpperCase() + s.slice(1);

  // ---- A task ------------------------------------------------------------------------------

  function taskView(route, container) {
    const { queue, id } = route;
    const section = h('section', { id: 'task', class: 'panel', 'data-task-id': id });
    container.append(section);
    return {
      async update() {
        let task;
        try {
          task = await api('GET', `/api/queues/${enc(queue)}/tasks/${enc(id)}`);
        } catch (e) {
          if (e.code === 'task_not_found') {
            section.replaceChildren(h('h1', { text: 'Task not found' }),
              h('p', { text: `Task ${id} is no longer in queue ${queue}: it finished, or was deleted.` }),
              h('a', { href: `#/queues/${enc(queue)}/pending`, text: `Back to ${queue}` }));
            return;
          }
          throw e;
        }
        const fields = [
          ['id', 'ID', task.id], ['type', 'Type', task.type], ['state', 'State', task.state], ['queue', 'Queue', task.queue],
          ['priority', 'Priority', task.priority === 0 ? '0 (the default)' : String(task.priority)],
          ['retried', 'Retried', String(task.retried)], ['max_retry', 'Max retry', String(task.max_retry)],
          ['last_error', 'Last error', task.last_error || '–'], ['last_failed_at', 'Last failed', fmtTime(task.last_failed_at)],
          ['next_process_at', 'Next process at', fmtTime(task.next_process_at)], ['group', 'Group', task.group || '–'],
          ['timeout', 'Timeout', task.timeout_seconds ? `${task.timeout_seconds} s` : '–'],
          ['deadline', 'Deadline', fmtTime(task.deadline)], ['debounce_key', 'Debounce key', task.debounce_key || '–'],
          ['retention', 'Retention', task.retention_seconds ? `${task.retention_seconds} s` : '–'],
          ['completed_at', 'Completed', fmtTime(task.completed_at)],
          ['orphaned', 'Orphaned', task.is_orphaned ? 'yes (its worker lost the lease)' : 'no'],
          ['progress', 'Progress', task.progress ? `${progressText(task.progress)} (reported ${fmtTime(task.progress.reported_at)})` : '–'],
        ];
        const list = h('dl', { class: 'fields' });
        for (const [field, label, value] of fields) {
          list.append(h('dt', { text: label }), h('dd', { 'data-field': field, text: value }));
        }
        if (task.workflow) {
          list.append(h('dt', { text: 'Workflow' }), h('dd', { 'data-field': 'workflow' }, workflowLink(task.workflow)));
        }
        const headerRows = Object.entries(task.headers);
        const headers = headerRows.length === 0 ? h('p', { 'data-field': 'headers', class: 'muted', text: 'No headers.' })
          : h('table', { 'data-field': 'headers', class: 'kv' }, h('tbody', {}, headerRows.map(([k, v]) =>
            h('tr', {}, [h('th', { scope: 'row', text: k }), h('td', { class: 'mono', text: v })]))));
        // A waiting task takes no action of its own: its workflow's page cancels it.
        const actions = task.state === 'waiting' && task.workflow
          ? h('div', { class: 'toolbar' }, [h('span', { class: 'muted', text: 'Waiting for the tasks it depends on.' }),
            h('a', { 'data-action': 'open-workflow', href: `#/workflows/${enc(task.workflow)}`, text: 'Open its workflow' })])
          : writable() ? h('div', { class: 'toolbar' }, ROW_ACTIONS[task.state].map((action) => h('button', {
            type: 'button', 'data-action': action, class: action === 'delete' || action === 'cancel' ? 'danger' : null,
            text: cap(action), onclick: () => act(() => api('POST', `/api/queues/${enc(queue)}/tasks/${enc(id)}/${action}`)),
          }))) : null;
        section.replaceChildren(
          h('h1', {}, [h('a', { href: `#/queues/${enc(queue)}/${task.state}`, text: queue }), ' / ', h('span', { class: 'mono', text: task.id })]),
          actions, list,
          h('h2', { text: `Payload (${fmtNumber(task.payload.size)} bytes${task.payload.truncated ? ', truncated' : ''})` }),
          h('pre', { 'data-field': 'payload', 'data-format': task.payload.format, class: 'code', text: task.payload.text }),
          h('h2', { text: 'Headers' }), headers,
          h('h2', { text: 'Result' }),
          task.result ? h('pre', { 'data-field': 'result', 'data-format': task.result.format, class: 'code', text: task.result.text })
            : h('p', { 'data-field': 'result', class: 'muted', text: 'No result.' }),
        );
      },
    };
  }

  // ---- Workflows ---------------------------------------------------------------------------

  // The states a workflow's task can be in, in the order a task moves through them, with the
  // legend's words for them.
  const WORKFLOW_TASK_STATES = [
    ['waiting', 'waiting'], ['pending', 'pending'], ['scheduled', 'scheduled'], ['active', 'active'],
    ['retry', 'retry'], ['completed', 'completed (succeeded)'], ['succeeded', 'succeeded (not kept)'],
    ['archived', 'archived (failed)'], ['gone', 'gone (deleted)'],
  ];
  // The graph's geometry, in pixels: tasks are boxes in columns, one column per layer.
  // Labels start at `inset` inside their box and are cut to `labelChars` characters before they
  // are measured.
  const GRAPH = { nodeWidth: 176, nodeHeight: 42, gapX: 56, gapY: 14, pad: 12, inset: 10, labelChars: 26 };

  const workflowBadge = (state) => h('span', { class: `badge workflow-${state}`, text: state });

  // Shows `text` in SVG text `node`, cut with an ellipsis to fit `width` pixels; the whole text
  // stays in its `data-text`. Measuring takes a layout, so an unchanged text is left alone.
  function fitText(node, text, width) {
    if (node.dataset.text === text) return;
    node.dataset.text = text;
    let shown = text.length > GRAPH.labelChars ? `${text.slice(0, GRAPH.labelChars - 1)}…` : text;
    node.textContent = shown;
    while (shown.length > 1 && node.getComputedTextLength() > width) {
      shown = `${shown.slice(0, -2)}…`;
      node.textContent = shown;
    }
  }

  function workflowsView(_route, container) {
    const local = { page: 1, size: 20 };
    const list = table('workflows', ['ID', 'Created', 'Tasks', 'State']);
    const pageInfo = h('span', { id: 'workflows-page-info', class: 'muted' });
    const prev = h('button', { type: 'button', id: 'workflows-prev', text: '‹ Previous', disabled: true,
      onclick: () => { if (local.page > 1) { local.page -= 1; refresh(); } } });
    const next = h('button', { type: 'button', id: 'workflows-next', text: 'Next ›', disabled: true,
      onclick: () => { local.page += 1; refresh(); } });
    // The newest first: the list's end moves as workflows are stored and forgotten, so it has
    // no last page button.
    const first = h('button', { type: 'button', id: 'workflows-first', text: '« First', disabled: true,
      onclick: () => { local.page = 1; refresh(); } });
    container.append(h('section', { class: 'panel' }, [
      h('h1', { text: 'Workflows' }),
      h('p', { class: 'muted', text: 'Newest first; each is kept for 7 days after it was stored.' }),
      list.node, h('div', { class: 'pager' }, [first, prev, pageInfo, next]),
    ]));
    return {
      async update() {
        const data = await api('GET', `/api/workflows?page=${local.page}&size=${local.size}`);
        if (data.workflows.length === 0 && local.page > 1) {
          local.page -= 1;
          return this.update();
        }
        list.body.replaceChildren();
        if (data.workflows.length === 0) emptyRow(list.body, 4, 'No workflows kept.');
        for (const w of data.workflows) {
          list.body.append(h('tr', { 'data-workflow-id': w.id, 'data-state': w.state }, [
            h('td', { 'data-field': 'id', class: 'mono' }, h('a', { href: `#/workflows/${enc(w.id)}`, text: w.id })),
            timeCell('created_at', w.created_at),
            h('td', { 'data-field': 'tasks', class: 'num', text: fmtNumber(w.tasks) }),
            w.state ? h('td', { 'data-field': 'state' }, workflowBadge(w.state))
              : h('td', { 'data-field': 'state', class: 'muted', text: '–', title: 'A large workflow: open it to see' }),
          ]));
        }
        pageInfo.textContent = `Page ${local.page}`;
        prev.disabled = local.page <= 1;
        first.disabled = local.page <= 1;
        next.disabled = !data.has_next;
      },
    };
  }

  // Lays a workflow's tasks out in layers, left to right. A task's layer is the longest path to
  // it from a task that waits for nothing; within a layer, tasks are ordered by the mean row of
  // their parents (one pass, which keeps a chord's edges from crossing), and each layer is
  // centred on the tallest. `nodes` are in plan order, so every parent comes before its child.
  function layoutWorkflow(nodes) {
    const layerOf = [];
    const layers = [];
    nodes.forEach((node, i) => {
      const layer = node.parents.reduce((deepest, p) => Math.max(deepest, layerOf[p] + 1), 0);
      layerOf.push(layer);
      (layers[layer] = layers[layer] || []).push(i);
    });
    const rowOf = [];
    const weight = (i) => {
      const parents = nodes[i].parents;
      return parents.length === 0 ? i : parents.reduce((sum, p) => sum + rowOf[p], 0) / parents.length;
    };
    for (const members of layers) {
      members.sort((a, b) => weight(a) - weight(b) || a - b);
      members.forEach((i, row) => { rowOf[i] = row; });
    }
    const tallest = Math.max(...layers.map((members) => members.length));
    const { nodeWidth, nodeHeight, gapX, gapY, pad } = GRAPH;
    const at = nodes.map((_, i) => {
      const offset = (tallest - layers[layerOf[i]].length) / 2;
      return { x: pad + layerOf[i] * (nodeWidth + gapX), y: pad + (rowOf[i] + offset) * (nodeHeight + gapY) };
    });
    return {
      at,
      width: 2 * pad + layers.length * (nodeWidth + gapX) - gapX,
      height: 2 * pad + tallest * (nodeHeight + gapY) - gapY,
    };
  }

  // Draws a workflow's graph into `box`: an edge from each task to each task waiting for it, and
  // a box per task linking to its task page. Returns the parts `paintWorkflow` fills in.
  function drawWorkflow(box, nodes) {
    const { nodeWidth, nodeHeight } = GRAPH;
    const layout = layoutWorkflow(nodes);
    const arrow = svg('marker', { id: 'workflow-arrow', viewBox: '0 0 8 8', refX: 8, refY: 4, markerWidth: 8,
      markerHeight: 8, markerUnits: 'userSpaceOnUse', orient: 'auto' }, svg('path', { d: 'M0,0 L8,4 L0,8 z', class: 'graph-arrow' }));
    const edges = [];
    nodes.forEach((node, child) => {
      for (const parent of node.parents) {
        const [from, to] = [layout.at[parent], layout.at[child]];
        const [x1, y1, x2, y2] = [from.x + nodeWidth, from.y + nodeHeight / 2, to.x, to.y + nodeHeight / 2];
        const bend = (x1 + x2) / 2;
        edges.push(svg('path', { class: 'graph-edge', 'data-from': parent, 'data-to': child, 'marker-end': 'url(#workflow-arrow)',
          d: `M${x1},${y1} C${bend},${y1} ${bend},${y2} ${x2},${y2}` }));
      }
    });
    const parts = nodes.map((node, i) => {
      const part = { title: svg('title'), label: svg('text', { x: GRAPH.inset, y: 17, class: 'graph-label' }),
        detail: svg('text', { x: GRAPH.inset, y: 33, class: 'graph-detail' }) };
      part.group = svg('g', { class: 'graph-node', 'data-index': i, 'data-task-id': node.id,
        transform: `translate(${layout.at[i].x},${layout.at[i].y})` },
      [part.title, svg('rect', { width: nodeWidth, height: nodeHeight, rx: 6 }), part.label, part.detail]);
      return part;
    });
    const links = nodes.map((node, i) => svg('a', { href: `#/queues/${enc(node.queue)}/tasks/${enc(node.id)}` }, parts[i].group));
    box.replaceChildren(svg('svg', { width: layout.width, height: layout.height, viewBox: `0 0 ${layout.width} ${layout.height}`,
      role: 'group', 'aria-label': `The workflow's ${nodes.length} tasks and what each waits for` },
    [svg('defs', {}, arrow), ...edges, ...links]));
    return parts;
  }

  // A workflow task's state, with its progress while it runs.
  const taskStateText = (task) => (task.progress ? `${task.state} · ${progressText(task.progress)}` : task.state);

  // Shows each task's state now on the graph `drawWorkflow` drew.
  function paintWorkflow(parts, nodes) {
    const width = GRAPH.nodeWidth - 2 * GRAPH.inset;
    nodes.forEach((node, i) => {
      const part = parts[i];
      part.group.setAttribute('class', `graph-node state-${node.state}`);
      part.group.setAttribute('data-state', node.state);
      fitText(part.label, node.type || node.id, width);
      fitText(part.detail, taskStateText(node), width);
      const lines = [`${node.id} in queue ${node.queue}`, node.type && `type ${node.type}`, taskStateText(node),
        node.last_error && `error: ${node.last_error}`, node.parents.length > 0 && `waits for ${node.parents.length} task(s)`];
      part.title.textContent = lines.filter(Boolean).join('\n');
    });
  }

  function workflowView(route, container) {
    const { id } = route;
    const local = { page: 1, size: 20, parts: null };
    const summary = h('div', { id: 'workflow-summary', class: 'summary' });
    const cancelled = h('p', { id: 'workflow-cancelled', class: 'muted', hidden: true });
    const cancel = h('button', { type: 'button', class: 'danger', 'data-action': 'cancel-workflow', text: 'Cancel workflow',
      hidden: true, onclick: () => act(async () => {
        if (!window.confirm(`Cancel workflow "${id}"? Its tasks still to run are archived without running, and its running tasks are asked to stop.`)) return;
        const done = await api('POST', `/api/workflows/${enc(id)}/cancel`);
        cancelled.textContent = `Cancelled: ${fmtNumber(done.archived)} task(s) archived, ${fmtNumber(done.stopping)} running task(s) asked to stop.`;
        cancelled.hidden = false;
      }) });
    const note = h('p', { id: 'workflow-graph-note', class: 'muted' });
    const box = h('div', { id: 'workflow-graph', class: 'graph-box' });
    const legend = h('div', { id: 'workflow-legend', class: 'legend states' }, WORKFLOW_TASK_STATES.map(([state, label]) =>
      h('span', { class: `swatch state-swatch state-${state}`, text: label })));
    const tasks = table('workflow-tasks', ['#', 'ID', 'Type', 'Queue', 'State', 'Parents', 'Progress', 'Last error', 'Result']);
    const pageInfo = h('span', { id: 'workflow-page-info', class: 'muted' });
    const prev = h('button', { type: 'button', id: 'workflow-prev', text: '‹ Previous', disabled: true,
      onclick: () => { if (local.page > 1) { local.page -= 1; refresh(); } } });
    const next = h('button', { type: 'button', id: 'workflow-next', text: 'Next ›', disabled: true,
      onclick: () => { local.page += 1; refresh(); } });
    const first = h('button', { type: 'button', id: 'workflow-first', text: '« First', disabled: true,
      onclick: () => { local.page = 1; refresh(); } });
    const last = h('button', { type: 'button', id: 'workflow-last', text: 'Last »', disabled: true,
      onclick: () => { local.page = local.pages || 1; refresh(); } });
    const head = h('section', { id: 'workflow', class: 'panel', 'data-workflow-id': id }, [
      h('div', { class: 'panel-head' }, [
        h('h1', {}, [h('a', { href: '#/workflows', text: 'Workflows' }), ' / ', h('span', { id: 'workflow-id', class: 'mono', text: id })]),
        writable() ? h('span', { class: 'actions' }, cancel) : null,
      ]),
      summary, cancelled,
    ]);
    const graphPanel = h('section', { class: 'panel' }, [h('h2', { text: 'Graph' }), note, box, legend]);
    const tablePanel = h('section', { class: 'panel' }, [h('h2', { text: 'Tasks' }), tasks.node,
      h('div', { class: 'pager' }, [first, prev, pageInfo, next, last])]);
    container.append(head, graphPanel, tablePanel);

    function showSummary(data) {
      const order = (state) => {
        const at = WORKFLOW_TASK_STATES.findIndex(([s]) => s === state);
        return at < 0 ? WORKFLOW_TASK_STATES.length : at;
      };
      const counts = Object.entries(data.counts).sort(([a], [b]) => order(a) - order(b));
      summary.replaceChildren(workflowBadge(data.state),
        h('span', { 'data-field': 'total', text: `${fmtNumber(data.total)} task(s)` }),
        ...counts.map(([state, n]) => h('span', { class: `swatch state-swatch state-${state}`, 'data-count-state': state,
          text: `${state} ${fmtNumber(n)}` })));
      cancel.hidden = data.state !== 'running';
    }

    function showGraph(data) {
      const drawable = data.graph !== null;
      box.hidden = !drawable;
      legend.hidden = !drawable;
      if (!drawable) {
        note.textContent = `This workflow has ${fmtNumber(data.total)} tasks, more than the ${fmtNumber(data.graph_limit)} ` +
          `the page draws: its tasks are listed below, ${local.size} a page.`;
        return;
      }
      note.textContent = 'Each arrow leads from a task to one that waits for it; each box links to its task.';
      // A workflow's tasks and edges never change: it is drawn once, and repainted on refresh.
      if (!local.parts) local.parts = drawWorkflow(box, data.graph);
      paintWorkflow(local.parts, data.graph);
    }

    function showTasks(data) {
      const idOf = (index) => (data.graph ? data.graph[index].id : `#${index}`);
      tasks.body.replaceChildren();
      for (const t of data.tasks) {
        const parents = t.parents.map(idOf);
        const shown = parents.length > 3 ? `${parents.slice(0, 3).join(', ')} and ${fmtNumber(parents.length - 3)} more` : parents.join(', ');
        tasks.body.append(h('tr', { 'data-task-id': t.id, 'data-state': t.state, 'data-index': t.index }, [
          h('td', { 'data-field': 'index', class: 'num', text: t.index }),
          h('td', { 'data-field': 'id', class: 'mono' }, h('a', { href: `#/queues/${enc(t.queue)}/tasks/${enc(t.id)}`, text: t.id })),
          h('td', { 'data-field': 'type', text: t.type || '–' }),
          h('td', { 'data-field': 'queue', text: t.queue }),
          h('td', { 'data-field': 'state' }, h('span', { class: `state-chip state-${t.state}`, text: t.state })),
          h('td', { 'data-field': 'parents', class: 'mono', text: shown || '–', title: parents.join(', ') || null }),
          progressCell(t.progress),
          errorCell(t),
          h('td', { 'data-field': 'result', class: 'mono payload', text: t.result_preview || '–',
            title: t.result_size === null ? null : `${fmtNumber(t.result_size)} bytes` }),
        ]));
      }
      const pages = Math.max(1, Math.ceil(data.total / local.size));
      local.pages = pages;
      pageInfo.textContent = `Page ${local.page} of ${pages} · ${fmtNumber(data.total)} task(s)`;
      prev.disabled = local.page <= 1;
      first.disabled = local.page <= 1;
      next.disabled = !data.has_next;
      last.disabled = local.page >= pages;
    }

    return {
      async update() {
        let data;
        try {
          data = await api('GET', `/api/workflows/${enc(id)}?page=${local.page}&size=${local.size}`);
        } catch (e) {
          if (e.code !== 'workflow_not_found') throw e;
          head.replaceChildren(h('h1', { text: 'Workflow not found' }),
            h('p', { text: `Workflow ${id} is not kept: it was never stored, or was stored more than 7 days ago.` }),
            h('a', { href: '#/workflows', text: 'Back to the workflows' }));
          graphPanel.hidden = true;
          tablePanel.hidden = true;
          return;
        }
        if (data.tasks.length === 0 && local.page > 1) {
          local.page = Math.max(1, Math.ceil(data.total / local.size));
          return this.update();
        }
        showSummary(data);
        showGraph(data);
        showTasks(data);
      },
    };
  }

  // ---- Servers -----------------------------------------------------------------------------

  // A server's queues with their priorities: a queue links to its page; a pattern (a name with
  // `*`, such as `tenant:*`, serving every queue it matches) is marked as one and links nowhere.
  function serverQueues(server) {
    const nodes = [];
    for (const [name, priority] of Object.entries(server.queues)) {
      if (nodes.length > 0) nodes.push(', ');
      nodes.push(name.includes('*')
        ? h('span', { class: 'queue-pattern', 'data-pattern': name, title: `Every queue whose name matches ${name}` },
          [h('em', { text: name }), ' ', h('span', { class: 'badge', text: 'pattern' })])
        : h('a', { 'data-queue': name, href: `#/queues/${enc(name)}/pending`, text: name }));
      nodes.push(h('span', { class: 'muted', text: ` (${priority})`, title: `priority ${priority}` }));
    }
    if (server.strict_priority) {
      nodes.push(' ', h('span', { class: 'badge', text: 'strict',
        title: 'Strict priority: a queue is served only while every queue of a higher priority is empty' }));
    }
    return nodes;
  }

  // Quiet and Stop for one server: a request its next heartbeat reads (Go asynq's servers
  // ignore it). Quiet only while the server is active.
  function serverButtons(server, notice) {
    const send = (request, question) => act(async () => {
      if (!window.confirm(question)) return;
      await api('POST', `/api/servers/${enc(server.id)}/${request}`);
      notice.textContent = `Sent ${request} to server ${server.host}:${server.pid} (${server.id}); it acts on its next heartbeat.`;
      notice.hidden = false;
    });
    return [
      h('button', { type: 'button', 'data-action': 'quiet', text: 'Quiet', disabled: server.status !== 'active',
        title: 'Finish the running tasks and take no new ones',
        onclick: () => send('quiet', `Quiet server ${server.host}:${server.pid}? It finishes its running tasks and takes no new ones.`) }),
      h('button', { type: 'button', class: 'danger', 'data-action': 'stop', text: 'Stop',
        title: 'Shut down gracefully, as on SIGTERM',
        onclick: () => send('stop', `Stop server ${server.host}:${server.pid}? It shuts down gracefully, as on SIGTERM.`) }),
    ];
  }

  function serversView(_route, container) {
    const controls = writable();
    const columns = ['ID', 'Host', 'PID', 'Status', 'Concurrency', 'Active', 'Queues (priority)', 'Started'];
    const servers = table('servers', controls ? [...columns, 'Actions'] : columns);
    const workers = table('workers', ['Task', 'Type', 'Queue', 'Payload', 'Server', 'Started', 'Deadline']);
    const notice = h('p', { id: 'server-request-sent', class: 'muted', hidden: true });
    container.append(
      h('section', { class: 'panel' }, [h('h1', { text: 'Servers' }), notice, servers.node]),
      h('section', { class: 'panel' }, [h('h2', { text: 'Active workers' }), workers.node]));
    return {
      async update() {
        const data = await api('GET', '/api/servers');
        servers.body.replaceChildren();
        workers.body.replaceChildren();
        if (data.servers.length === 0) emptyRow(servers.body, controls ? 9 : 8, 'No live servers.');
        let any = false;
        for (const s of data.servers) {
          servers.body.append(h('tr', { 'data-server-id': s.id }, [
            h('td', { 'data-field': 'id', class: 'mono', text: s.id }), h('td', { 'data-field': 'host', text: s.host }),
            h('td', { 'data-field': 'pid', class: 'num', text: s.pid }), h('td', { 'data-field': 'status', text: s.status }),
            h('td', { 'data-field': 'concurrency', class: 'num', text: s.concurrency }),
            h('td', { 'data-field': 'active_workers', class: 'num', text: s.workers.length }),
            h('td', { 'data-field': 'queues' }, serverQueues(s)),
            timeCell('started', s.started),
            controls ? h('td', { class: 'actions' }, serverButtons(s, notice)) : null]));
          for (const w of s.workers) {
            any = true;
            workers.body.append(h('tr', { 'data-task-id': w.task_id, 'data-server-id': s.id }, [
              h('td', { 'data-field': 'id', class: 'mono' }, h('a', { href: `#/queues/${enc(w.queue)}/tasks/${enc(w.task_id)}`, text: w.task_id })),
              h('td', { 'data-field': 'type', text: w.task_type }), h('td', { 'data-field': 'queue', text: w.queue }),
              h('td', { 'data-field': 'payload', class: 'mono payload', text: w.payload_preview }),
              h('td', { 'data-field': 'server', class: 'mono', text: `${s.host}:${s.pid}` }),
              timeCell('started', w.started), timeCell('deadline', w.deadline)]));
          }
        }
        if (!any) emptyRow(workers.body, 7, 'No task is running.');
      },
    };
  }

  // ---- Shared concurrency slots ------------------------------------------------------------

  // The tasks holding slots of a shared concurrency limit, for the key the operator types (kept
  // in the route, so a reload or a link shows the same key).
  function slotsView(route, container) {
    const { key } = route;
    const input = h('input', { id: 'slot-key', type: 'search', name: 'key', value: key, placeholder: 'type:pdf:render',
      'aria-label': 'Slot key', autocomplete: 'off', spellcheck: 'false' });
    const form = h('form', { id: 'slot-form', class: 'toolbar' }, [input, h('button', { type: 'submit', text: 'Show holders' })]);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const typed = input.value.trim();
      if (!typed) return;
      const target = `#/slots/${enc(typed)}`;
      if (location.hash === target) refresh(); else location.hash = target;
    });
    const holders = table('slot-holders', ['Task ID', 'Held until']);
    const count = h('p', { id: 'slot-count', class: 'muted' });
    const results = h('section', { id: 'slot-results', class: 'panel', hidden: !key }, [
      h('h2', {}, ['Holders of ', h('span', { id: 'slot-key-shown', class: 'mono', text: key })]), count, holders.node]);
    container.append(h('section', { class: 'panel' }, [
      h('h1', { text: 'Shared concurrency slots' }),
      h('p', { class: 'muted', text: 'A shared concurrency limit lets at most so many tasks of one key run at once across '
        + 'every server: type:<task type> for Config::shared_type_concurrency, or the keys Config::shared_limit derives. '
        + 'A running task holds a slot until its outcome is written; a hold its server stops renewing runs out.' }),
      form,
    ]), results);
    if (!key) queueMicrotask(() => input.focus());
    return {
      async update() {
        if (!key) return;
        const data = await api('GET', `/api/slots/${enc(key)}`);
        count.textContent = `${fmtNumber(data.holders.length)} task(s) hold a slot now.`;
        holders.body.replaceChildren(...data.holders.map((holder) => h('tr', { 'data-task-id': holder.task_id }, [
          h('td', { 'data-field': 'task_id', class: 'mono', text: holder.task_id }),
          timeCell('held_until', holder.held_until)])));
        if (data.holders.length === 0) emptyRow(holders.body, 2, 'No task holds a slot of this key.');
      },
    };
  }

  // ---- Schedulers --------------------------------------------------------------------------

  function schedulersView(_route, container) {
    const entries = table('schedulers', ['ID', 'Spec', 'Type', 'Payload', 'Options', 'Next', 'Previous', '']);
    const history = table('scheduler-history', ['Task', 'Enqueued at']);
    const historyTitle = h('h2', { text: 'Enqueue history' });
    const historyPanel = h('section', { class: 'panel', id: 'scheduler-history-panel', hidden: true }, [historyTitle, history.node]);
    const local = { entry: null };
    container.append(h('section', { class: 'panel' }, [h('h1', { text: 'Scheduler entries' }), entries.node]), historyPanel);
    async function loadHistory() {
      if (!local.entry) return;
      const data = await api('GET', `/api/schedulers/${enc(local.entry)}/history?size=50`);
      historyTitle.textContent = `Enqueue history of ${local.entry}`;
      history.body.replaceChildren();
      if (data.events.length === 0) emptyRow(history.body, 2, 'Nothing enqueued yet.');
      for (const e of data.events) {
        history.body.append(h('tr', { 'data-task-id': e.task_id }, [
          h('td', { 'data-field': 'task_id', class: 'mono', text: e.task_id }), timeCell('enqueued_at', e.enqueued_at)]));
      }
      historyPanel.hidden = false;
    }
    return {
      async update() {
        const data = await api('GET', '/api/schedulers');
        entries.body.replaceChildren();
        if (data.entries.length === 0) emptyRow(entries.body, 8, 'No scheduler is running.');
        for (const e of data.entries) {
          entries.body.append(h('tr', { 'data-entry-id': e.id, class: e.id === local.entry ? 'selected' : null }, [
            h('td', { 'data-field': 'id', class: 'mono', text: e.id }), h('td', { 'data-field': 'spec', class: 'mono', text: e.spec }),
            h('td', { 'data-field': 'type', text: e.task_type }),
            h('td', { 'data-field': 'payload', class: 'mono payload', text: e.payload_preview }),
            h('td', { 'data-field': 'options', text: e.options.join(', ') }),
            timeCell('next', e.next), timeCell('prev', e.prev),
            h('td', { class: 'actions' }, h('button', { type: 'button', 'data-action': 'history', text: 'History',
              onclick: () => { local.entry = e.id; act(loadHistory); } }))]));
        }
        await loadHistory();
      },
    };
  }

  // ---- Redis -------------------------------------------------------------------------------

  function redisView(_route, container) {
    const info = table('redis-info', ['Fact', 'Value'], 'kv');
    const nodes = table('redis-nodes', ['Node ID', 'Address']);
    const locations = table('queue-locations', ['Queue', 'Slot', 'Nodes']);
    const fields = table('redis-fields', ['Field', 'Value'], 'kv');
    const locationPanel = h('section', { class: 'panel', hidden: true }, [h('h2', { text: 'Queues on the Cluster' }), locations.node]);
    const banner = evictionBanner('redis-eviction-warning');
    container.append(
      banner,
      h('section', { class: 'panel' }, [h('h1', { text: 'Redis' }), info.node]),
      h('section', { class: 'panel' }, [h('h2', { text: 'Nodes' }), nodes.node]),
      locationPanel,
      h('section', { class: 'panel' }, h('details', {}, [h('summary', { text: 'Everything the server reports' }), fields.node])));
    return {
      async update() {
        const data = await api('GET', '/api/redis');
        showEvictionRisks(banner, data.eviction_risks);
        const facts = [['kind', 'Kind', data.kind], ['namespace', 'Namespace', data.namespace], ['version', 'Version', data.version],
          ['used_memory_human', 'Memory used', data.used_memory_human], ['used_memory_peak_human', 'Memory peak', data.used_memory_peak_human],
          ['connected_clients', 'Connected clients', data.connected_clients], ['uptime_in_seconds', 'Uptime', data.uptime_in_seconds ? fmtMs(Number(data.uptime_in_seconds) * 1000) : null]];
        info.body.replaceChildren(...facts.map(([field, label, value]) => h('tr', { 'data-field': field },
          [h('th', { scope: 'row', text: label }), h('td', { text: value === null || value === undefined ? '–' : value })])));
        nodes.body.replaceChildren(...data.nodes.map((n) => h('tr', { 'data-node-id': n.id || n.addr },
          [h('td', { class: 'mono', 'data-field': 'id', text: n.id || '–' }), h('td', { class: 'mono', 'data-field': 'addr', text: n.addr })])));
        if (data.nodes.length === 0) emptyRow(nodes.body, 2, 'No nodes reported.');
        locationPanel.hidden = data.queue_locations.length === 0;
        locations.body.replaceChildren(...data.queue_locations.map((l) => h('tr', { 'data-queue': l.queue }, [
          h('td', { text: l.queue }), h('td', { class: 'num', text: l.slot }), h('td', { class: 'mono', text: l.nodes.map((n) => n.addr).join(', ') })])));
        fields.body.replaceChildren(...Object.entries(data.fields).map(([k, v]) => h('tr', { 'data-field': k },
          [h('th', { scope: 'row', class: 'mono', text: k }), h('td', { class: 'mono', text: v })])));
      },
    };
  }

  // ---- Theme -------------------------------------------------------------------------------

  // Light or dark: the system's choice (followed as it changes) until the button picks one,
  // which is remembered.
  function setUpTheme() {
    const root = document.documentElement;
    const button = byId('theme');
    const systemDark = window.matchMedia('(prefers-color-scheme: dark)');
    let saved = null;
    try { saved = window.localStorage.getItem('asynq-theme'); } catch (e) { /* storage blocked */ }
    const apply = (theme) => {
      root.setAttribute('data-theme', theme);
      button.textContent = theme === 'dark' ? 'Light' : 'Dark';
    };
    const system = () => (systemDark.matches ? 'dark' : 'light');
    apply(saved === 'dark' || saved === 'light' ? saved : system());
    systemDark.addEventListener('change', () => { if (saved === null) apply(system()); });
    button.addEventListener('click', () => {
      saved = root.getAttribute('data-theme') === 'dark' ? 'light' : 'dark';
      try { window.localStorage.setItem('asynq-theme', saved); } catch (e) { /* storage blocked */ }
      apply(saved);
    });
  }

  // ---- Pages of other files ------------------------------------------------------------------
  // A page in a file of its own (metrics.js) registers its view, by the first part of its route,
  // before the dashboard starts, and builds it with these helpers.

  const extraViews = new Map();
  window.asynqDashboard = Object.freeze({
    register: (name, view) => extraViews.set(name, view),
    h, svg, api, table, emptyRow, enc, fmtNumber, fmtMs, fmtTime, refresh,
  });

  // ---- Start -------------------------------------------------------------------------------

  async function start() {
    let session;
    try {
      session = await loadSession();
    } catch (e) {
      showError(e.message, true);
      return;
    }
    if (session.auth_required && !session.authenticated) {
      showLogin();
      return;
    }
    byId('login').hidden = true;
    byId('view').hidden = false;
    mount();
    startTimer();
    resumeJobs();
  }

  document.addEventListener('DOMContentLoaded', () => {
    byId('login').addEventListener('submit', onLogin);
    byId('logout').addEventListener('click', onLogout);
    byId('refresh-now').addEventListener('click', () => refresh());
    setUpTheme();
    window.addEventListener('hashchange', () => { if (app.session && byId('login').hidden) mount(); });
    start();
  });
})();
