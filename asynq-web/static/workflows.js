// The workflows' pages: the list of those kept (#/workflows) and a workflow's graph and tasks
// (#/workflows/<id>).
'use strict';

(() => {
  const d = window.asynqDashboard;
  const { h, svg, table, emptyRow, fmtNumber, timeCell, errorCell, progressText, progressCell, enc, api, act,
    writable, refresh } = d;

  // ---- Workflows ---------------------------------------------------------------------------

  // The states a workflow's task can be in, in the order a task moves through them, with the
  // legend's words for them.
  const WORKFLOW_TASK_STATES = [
    ['waiting', 'waiting'], ['pending', 'pending'], ['scheduled', 'scheduled'], ['active', 'active'],
    ['retry', 'retry'], ['completed', 'completed (succeeded)'], ['succeeded', 'succeeded (not kept)'],
    ['archived', 'archived (failed)'], ['failed', 'failed (not kept)'], ['unrecorded', 'settled (outcome not recorded)'],
  ];
  // How the table and the tooltips name a state; the graph's boxes and the summary, narrower, use `BOX_WORDS`.
  const STATE_WORDS = { succeeded: 'succeeded (not kept)', failed: 'failed (not kept)', unrecorded: 'settled (outcome not recorded)' };
  const BOX_WORDS = { unrecorded: 'settled (not recorded)' };
  const TASK_STATE_HELP = {
    unrecorded: 'No longer stored, and no outcome was recorded: a Go server ran it (Go keeps no outcome of a task that '
      + 'nothing waits for), or it was deleted.',
  };
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
    const first = h('button', { type: 'button', id: 'workflows-first', text: '« First', disabled: true,
      onclick: () => { local.page = 1; refresh(); } });
    // The newest first: the end moves as workflows are stored and forgotten, so Last goes to the
    // last page of the count the latest refresh read (a page found empty steps back).
    const last = h('button', { type: 'button', id: 'workflows-last', text: 'Last »', disabled: true,
      onclick: () => { local.page = local.pages || 1; refresh(); } });
    container.append(h('section', { class: 'panel' }, [
      h('h1', { text: 'Workflows' }),
      h('p', { class: 'muted', text: 'Newest first; each is kept for 7 days after it was stored.' }),
      list.node, h('div', { class: 'pager' }, [first, prev, pageInfo, next, last]),
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
        local.pages = Math.max(1, Math.ceil(data.total / local.size));
        pageInfo.textContent = `Page ${local.page} of ${local.pages} · ${fmtNumber(data.total)} workflow(s)`;
        prev.disabled = local.page <= 1;
        first.disabled = local.page <= 1;
        next.disabled = !data.has_next;
        last.disabled = local.page >= local.pages;
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

  // A workflow task's state, with its progress while it runs; `words` names the states.
  const taskStateText = (task, words = STATE_WORDS) => {
    const state = words[task.state] || task.state;
    return task.progress ? `${state} · ${progressText(task.progress)}` : state;
  };

  // Shows each task's state now on the graph `drawWorkflow` drew.
  function paintWorkflow(parts, nodes) {
    const width = GRAPH.nodeWidth - 2 * GRAPH.inset;
    nodes.forEach((node, i) => {
      const part = parts[i];
      part.group.setAttribute('class', `graph-node state-${node.state}`);
      part.group.setAttribute('data-state', node.state);
      fitText(part.label, node.type || node.id, width);
      fitText(part.detail, taskStateText(node, BOX_WORDS), width);
      const lines = [`${node.id} in queue ${node.queue}`, node.type && `type ${node.type}`, taskStateText(node),
        TASK_STATE_HELP[node.state], node.last_error && `error: ${node.last_error}`,
        node.parents.length > 0 && `waits for ${node.parents.length} task(s)`];
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
          text: `${BOX_WORDS[state] || state} ${fmtNumber(n)}` })));
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
          h('td', { 'data-field': 'state' }, h('span', { class: `state-chip state-${t.state}`, text: STATE_WORDS[t.state] || t.state,
            title: TASK_STATE_HELP[t.state] || null })),
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

  Object.assign(d, { workflowsView, workflowView });
})();
