// The pages of what runs around the queues: servers and their workers (#/servers), shared
// concurrency slots (#/slots), scheduler entries (#/schedulers) and Redis (#/redis).
'use strict';

(() => {
  const d = window.asynqDashboard;
  const { h, table, emptyRow, fmtNumber, fmtMs, timeCell, enc, api, act, writable, refresh, evictionBanner,
    showEvictionRisks } = d;

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

  Object.assign(d, { serversView, slotsView, schedulersView, redisView });
})();
