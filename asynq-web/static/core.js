// The asynq dashboard's shared parts: DOM building, formatting, the JSON API (with its CSRF
// token), errors, the bulk jobs followed, and the refresh of the page shown. The dashboard's
// files are loaded in order by index.html; each adds its parts to window.asynqDashboard, and
// app.js, the last, starts the page. Nothing from the server is ever parsed as HTML.
'use strict';

(() => {
  // Go's seven states, then our workflow tasks waiting for the tasks they depend on.
  const STATES = ['pending', 'active', 'scheduled', 'retry', 'archived', 'completed', 'aggregating', 'waiting'];

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

  // Table cells of a task's fields, for the pages that list tasks.
  const retriedCell = (t) => h('td', { 'data-field': 'retried', class: 'num', text: `${t.retried}/${t.max_retry}` });
  const errorCell = (t) => h('td', { 'data-field': 'last_error', class: 'error-text', text: t.last_error || '' });
  const failedAtCell = (t) => timeCell('last_failed_at', t.last_failed_at);
  // A task's priority within its queue; the default, 0, is muted.
  const priorityCell = (t) => h('td', { 'data-field': 'priority', class: t.priority === 0 ? 'num muted' : 'num',
    text: String(t.priority), title: 'Priority within the queue: higher runs first; 0 is the default' });
  // A link to the workflow a task belongs to.
  const workflowLink = (id) => h('a', { class: 'mono', href: `#/workflows/${enc(id)}`, text: id });
  const workflowCell = (t) => h('td', { 'data-field': 'workflow' }, t.workflow ? workflowLink(t.workflow) : '–');
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
  const cap = (s) => s.charAt(0).toUpperCase() + s.slice(1);

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

  // ---- Refreshing, and the login form ------------------------------------------------------

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

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  // Shows the login form: the session ended, or the dashboard asks for one.
  function showLogin() {
    stopTimer();
    byId('login').hidden = false;
    byId('view').hidden = true;
    byId('logout').hidden = true;
    byId('last-updated').textContent = 'Not logged in';
    byId('login-token').focus();
  }

  // The parts the dashboard's other files build on, each adding its own while they load; app.js,
  // the last, replaces them with what a page of its own is given.
  window.asynqDashboard = { STATES, app, h, byId, svg, table, actionsHeader, emptyRow, fmtNumber, fmtBytes,
    fmtMs, fmtTime, timeCell, retriedCell, errorCell, failedAtCell, priorityCell, workflowLink, workflowCell,
    progressText, progressCell, enc, api, showError, clearError, act, writable, archiveWarning, reportTrimmed,
    follow, resumeJobs, showLogin, refresh, startTimer, sleep, cap };
})();
