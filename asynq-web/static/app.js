// The asynq dashboard: a small single-page app over the JSON API under /api/.
// Plain JavaScript, no framework: each view builds its skeleton once when the route changes
// and fills its tables on every refresh, so selections, the search box and focus survive the
// live updates. Nothing from the server is ever parsed as HTML.
// This file, loaded after the others (see index.html), logs in, routes and starts the page.
'use strict';

(() => {
  const d = window.asynqDashboard;
  const { STATES, app, h, byId, svg, table, emptyRow, fmtNumber, fmtMs, fmtTime, enc, api, showError,
    clearError, resumeJobs, showLogin, refresh, startTimer, overviewView, queueView, taskView, workflowsView,
    workflowView, serversView, slotsView, schedulersView, redisView } = d;

  // ---- Login and session -------------------------------------------------------------------

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
  // before the dashboard starts, and builds it with these helpers. They replace the parts the
  // dashboard's own files shared while they loaded.

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
