// A queue's page (#/queues/<queue>/<state>): its tasks of one state, a page at a time, with
// their actions, the search and the bulk actions; its groups, charts and live events; and a
// task's own page (#/queues/<queue>/tasks/<id>).
'use strict';

(() => {
  const d = window.asynqDashboard;
  const { STATES, app, h, table, actionsHeader, emptyRow, fmtNumber, fmtBytes, fmtMs, fmtTime, timeCell,
    retriedCell, errorCell, failedAtCell, priorityCell, workflowLink, workflowCell, progressText,
    progressCell, enc, api, showError, act, writable, archiveWarning, reportTrimmed, follow, refresh,
    queueButtons, fmtRate, lineChart, sleep, cap } = d;

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

  // The columns of a state's task list after ID, type and payload: what matters in that state.
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
          : event.progress !== null ? ` ${Math.round(event.progress * 100)}% ${event.progress_message}`
          : event.name ? ` ${event.name}` : '';
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
          ['parked', 'Parked', task.parked ? `${task.parked.reason} until ${fmtTime(task.parked.until)}` : '–'],
          ['steps', 'Steps', task.steps.length === 0 ? '–'
            : task.steps.map((s) => `${s.name} = ${s.result_preview} (${fmtTime(s.recorded_at)})`).join('; ')],
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

  Object.assign(d, { queueView, taskView });
})();
