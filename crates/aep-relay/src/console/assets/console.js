// Mission control. Everything shown comes from the relay (/console/api/*), which folds
// the events with aep-core; this file only draws it. Every string from an event goes
// into the page as text (textContent, text nodes, attribute values), never as markup.
'use strict';
(() => {
  const $ = (s, root = document) => root.querySelector(s);
  const el = (tag, cls, ...kids) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    for (const k of kids) if (k !== null && k !== undefined) e.append(k);
    return e;
  };
  const ROW_CAP = 2000;
  // a session's key: both strings whole, whatever they hold
  const keyOf = (source, session) => JSON.stringify([source, session]);
  const clock = (t) => {
    if (!t) return '–';
    const d = new Date(t);
    return isNaN(d) ? t : d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
  };
  const ms = (n) => (n === null || n === undefined) ? '' : (n < 1000 ? n + ' ms' : (n / 1000).toFixed(1) + ' s');
  const pos = (p) => p ? p.epoch + ':' + p.seq : '';

  // ---- the token: from the fragment (never sent) or the form; this tab only ----------
  // It goes out only as an Authorization header; a token the relay refuses is dropped.
  let token = sessionStorage.getItem('aep-token');
  const frag = new URLSearchParams(location.hash.slice(1));
  if (frag.has('token')) {
    token = frag.get('token');
    sessionStorage.setItem('aep-token', token);
    history.replaceState(null, '', location.pathname + location.search);
  }
  const auth = () => token ? { Authorization: 'Bearer ' + token } : {};

  const state = { sessions: new Map(), inbox: [], roster: [], control: false, counts: {} };
  const dirty = new Set();
  let full = false, inboxDirty = false, rosterDirty = false, frame = 0;
  let selected = null, timelineTimer = 0, live = null, names = 0;

  const setStatus = (text, down) => {
    const s = $('#status');
    s.textContent = text;
    s.classList.toggle('down', !!down);
  };

  // ---- the live stream ----------------------------------------------------------------
  function filters() {
    const p = new URLSearchParams();
    for (const [k, v] of new FormData($('#filters'))) if (v) p.set(k, v);
    return p;
  }

  async function connect() {
    if (live) live.abort();
    const ctl = new AbortController();
    live = ctl;
    try {
      const res = await fetch('/console/api/live?' + filters(), { headers: auth(), signal: ctl.signal, cache: 'no-store' });
      if (res.status === 401) return login(true);
      if (res.status === 400) {
        $('#filter-error').textContent = (await res.json()).detail;
        return;
      }
      if (!res.ok) throw new Error('HTTP ' + res.status);
      $('#filter-error').textContent = '';
      setStatus('connected');
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (line) apply(JSON.parse(line));
        }
      }
    } catch (e) {
      if (ctl.signal.aborted) return;
    }
    if (ctl.signal.aborted) return;
    setStatus('disconnected, retrying…', true);
    setTimeout(connect, 1000);
  }

  function apply(m) {
    if (m.keepalive) return;
    if (m.loading) {
      setStatus('loading: ' + m.events + ' events of the relay read…');
      return;
    }
    setStatus('live');
    if (m.full) {
      state.sessions.clear();
      full = true;
    }
    for (const s of m.sessions) {
      const k = keyOf(s.source, s.session);
      state.sessions.set(k, s);
      dirty.add(k);
    }
    for (const [source, session] of m.gone) {
      const k = keyOf(source, session);
      state.sessions.delete(k);
      dirty.add(k);
    }
    if (m.inbox) {
      state.inbox = m.inbox;
      state.inboxTotal = m.inbox_total;
      inboxDirty = true;
    }
    if (m.roster) {
      state.roster = m.roster;
      rosterDirty = true;
    }
    state.counts = m.counts;
    state.control = m.control;
    if (selected && (m.full || dirty.has(selected))) refreshTimeline(250);
    if (!frame) frame = requestAnimationFrame(render);
  }

  // ---- drawing, once per frame whatever arrived ------------------------------------------
  const rows = new Map();

  function render() {
    frame = 0;
    const tbody = $('#sessions tbody');
    if (full) {
      tbody.replaceChildren();
      rows.clear();
      const frag = document.createDocumentFragment();
      let n = 0;
      for (const [k, s] of state.sessions) {
        if (n++ >= ROW_CAP) break;
        const tr = row(k, s);
        frag.prepend(tr);
      }
      tbody.append(frag);
      full = false;
      dirty.clear();
    }
    for (const k of dirty) {
      const s = state.sessions.get(k);
      const old = rows.get(k);
      if (!s) {
        if (old) old.remove();
        rows.delete(k);
      } else if (old) {
        fill(old, s);
      } else if (rows.size < ROW_CAP) {
        tbody.prepend(row(k, s));
      }
    }
    dirty.clear();
    const more = $('#sessions-more');
    more.hidden = state.sessions.size <= rows.size;
    more.textContent = (state.sessions.size - rows.size) + ' more sessions match: narrow the filter to see them.';
    $('#count-sessions').textContent = state.sessions.size;
    if (inboxDirty) renderInbox();
    if (rosterDirty) renderRoster();
  }

  function row(k, s) {
    const tr = el('tr');
    rows.set(k, tr);
    const open = el('button', 'link');
    open.type = 'button';
    open.addEventListener('click', () => select(k));
    tr.append(el('td', null, open));
    for (let i = 0; i < 5; i++) tr.append(el('td'));
    fill(tr, s);
    return tr;
  }

  function fill(tr, s) {
    const td = tr.children;
    const b = td[0].firstChild;
    b.textContent = s.session;
    b.title = s.source;
    tr.dataset.session = s.session;
    tr.dataset.source = s.source;
    tr.dataset.pos = pos(s.position);
    tr.dataset.status = s.status;
    td[1].textContent = s.agent;
    td[2].textContent = s.status;
    td[2].className = 'st-' + s.status;
    td[3].textContent = clock(s.started);
    td[4].textContent = s.last_activity ? clock(s.last_activity.time) + ' ' + s.last_activity.type : '–';
    td[5].textContent = s.pending || '';
    tr.classList.toggle('selected', keyOf(s.source, s.session) === selected);
  }

  // ---- one session ------------------------------------------------------------------------
  function select(k) {
    const prev = selected && rows.get(selected);
    if (prev) prev.classList.remove('selected');
    selected = k;
    const tr = rows.get(k);
    if (tr) tr.classList.add('selected');
    $('#detail').hidden = false;
    refreshTimeline(0);
  }

  function refreshTimeline(delay) {
    clearTimeout(timelineTimer);
    timelineTimer = setTimeout(loadTimeline, delay);
  }

  async function loadTimeline() {
    const want = selected;
    if (!want) return;
    const [source, session] = JSON.parse(want);
    const p = new URLSearchParams({ source, session, limit: '2000' });
    const res = await fetch('/console/api/timeline?' + p, { headers: auth(), cache: 'no-store' });
    if (res.status === 401) return login(true);
    if (want !== selected) return;
    if (!res.ok) {
      const why = await res.json().catch(() => ({}));
      $('#timeline-note').textContent = why.detail || ('HTTP ' + res.status);
      $('#timeline').replaceChildren();
      return;
    }
    drawDetail(await res.json());
  }

  function fact(dl, name, value) {
    dl.append(el('dt', null, name), el('dd', null, value === null || value === undefined ? '–' : String(value)));
  }

  function drawDetail(t) {
    const s = t.state || {};
    $('#detail-title').textContent = t.session;
    const dl = $('#detail-facts');
    dl.replaceChildren();
    fact(dl, 'source', t.source || s.source);
    fact(dl, 'agent', s.agent);
    fact(dl, 'status', s.status);
    fact(dl, 'started', s.started);
    fact(dl, 'ended', s.ended);
    fact(dl, 'position', pos(s.position));
    const c = s.claim;
    fact(dl, 'connected', c ? 'yes' + (c.claimants > 1 ? ' (' + c.claimants + ' live claims)' : '') : 'no');
    fact(dl, 'accepts', c ? (c.accepts ? c.accepts.join(', ') : 'undeclared') : '–');
    const runs = new Map((s.runs || []).map((r) => [r.run, r]));
    const tools = new Map((s.tools || []).map((x) => [x.call, x]));
    const box = $('#detail-runs');
    box.replaceChildren();
    for (const r of s.runs || []) {
      if (r.status !== 'running' || !state.control) continue;
      const b = el('button', null, 'Cancel run ' + r.run);
      b.type = 'button';
      const out = el('span', 'outcome');
      out.setAttribute('role', 'status');
      b.addEventListener('click', () => {
        if (confirm('Cancel run ' + r.run + ' of ' + t.session + '?')) command('/console/api/cancel', { source: t.source, session: t.session, run: r.run, reason: 'cancelled from mission control' }, out);
      });
      box.append(el('div', 'row', b, out));
    }
    const note = [];
    if (t.omitted) note.push(t.omitted + ' earlier events not shown.');
    if (t.missing_before) note.push('Events before ' + pos(t.missing_before) + ' are not held by the relay (its replay buffer).');
    if (t.exhausted) note.push('replay-exhausted: the relay no longer holds what came before ' + pos(t.exhausted) + '.');
    if (t.incomplete) note.push('The relay did not read the whole session in time: what it read is shown.');
    $('#timeline-note').textContent = note.join(' ');
    const top = $('#timeline');
    const frag = document.createDocumentFragment();
    const runLists = new Map();
    const toolLists = new Map();
    for (const ev of t.events) {
      if (ev.gap) {
        frag.append(el('li', 'gap', 'seq ' + ev.gap[0] + '–' + ev.gap[1] + ' of epoch ' + ev.position.epoch + ' never arrived (a gap, AEP-0001 §7)'));
      }
      let parent = frag;
      if (ev.run) {
        let list = runLists.get(ev.run);
        if (!list) {
          const r = runs.get(ev.run);
          const sum = el('summary', null, 'run ' + ev.run + ' · ', el('span', 'st-' + (r ? r.status : ''), r ? r.status : '?'));
          list = el('ol');
          const d = el('details', null, sum, list);
          d.open = true;
          frag.append(el('li', null, d));
          runLists.set(ev.run, list);
        }
        parent = list;
      }
      if (ev.tool) {
        let list = toolLists.get(ev.tool);
        if (!list) {
          const x = tools.get(ev.tool);
          const sum = el('summary', null, 'tool ' + (x ? x.name : ev.tool) + ' · ', el('span', 'st-' + (x ? x.status : ''), x ? x.status : '?'));
          if (x && x.duration_ms !== null) sum.append(' · ' + ms(x.duration_ms));
          if (x && x.gated_by.length) sum.append(' · gated by ' + x.gated_by.join(', '));
          list = el('ol');
          const li = el('li', null, el('details', null, sum, list));
          li.dataset.tool = ev.tool;
          parent.append(li);
          toolLists.set(ev.tool, list);
        }
        parent = list;
      }
      parent.append(eventRow(ev));
    }
    top.replaceChildren(frag);
  }

  function eventRow(ev) {
    const json = el('pre', 'json');
    json.hidden = true;
    const b = el('button', null, 'JSON');
    b.type = 'button';
    b.setAttribute('aria-expanded', 'false');
    b.addEventListener('click', () => {
      if (!json.textContent) {
        try { json.textContent = JSON.stringify(JSON.parse(ev.json), null, 2); } catch (e) { json.textContent = ev.json; }
      }
      json.hidden = !json.hidden;
      b.setAttribute('aria-expanded', String(!json.hidden));
    });
    const line = el('div', 'ev',
      el('time', null, clock(ev.time)),
      el('span', 'pos', pos(ev.position)),
      el('span', 'type', ev.type),
      el('span', 'sev-' + ev.severity, ev.severity),
      ev.subject ? el('span', null, ev.subject) : null,
      b);
    const li = el('li', null, line, json);
    li.dataset.id = ev.id;
    return li;
  }

  // ---- the inbox ----------------------------------------------------------------------------
  const cards = new Map();

  function renderInbox() {
    inboxDirty = false;
    const list = $('#inbox');
    const now = new Set();
    for (const item of state.inbox) {
      const k = JSON.stringify([item.source, item.session, item.request.id]);
      now.add(k);
      if (!cards.has(k)) {
        let card;
        try {
          card = inboxCard(item);
        } catch (e) {
          // one request the page cannot draw as a form stays listed, as text
          card = el('li', 'card info', el('p', 'prompt', String(item.request.prompt ?? '(no prompt)')), el('p', 'hint', 'This request cannot be shown as a form: ' + e.message));
        }
        cards.set(k, card);
        list.append(card);
      }
    }
    for (const [k, card] of cards) {
      if (!now.has(k)) {
        card.remove();
        cards.delete(k);
      }
    }
    const total = state.inboxTotal || 0;
    $('#count-inbox').textContent = total;
    $('#inbox-note').textContent = total
      ? 'Every pending attention request of the fleet, oldest first' + (total > state.inbox.length ? ' (the oldest ' + state.inbox.length + ' of ' + total + ').' : '.')
      : 'Nothing is waiting for an answer.';
  }

  function inboxCard(item) {
    const r = item.request;
    const card = el('li', 'card');
    card.dataset.request = r.id;
    card.dataset.session = item.session;
    const meta = el('div', 'meta',
      el('span', null, item.agent), el('span', null, item.session), el('span', null, r.kind || 'request'),
      el('span', null, 'since ' + clock(r.since)));
    if (r.subject) meta.append(el('span', null, 'subject ' + r.subject));
    if (r.tool) meta.append(el('span', null, 'gates tool call ' + r.tool));
    if (r.expires_at) meta.append(el('span', null, 'expires ' + clock(r.expires_at)));
    card.append(meta, el('p', 'prompt', r.prompt === null ? '(no prompt)' : r.prompt));
    if (!r.answerable) {
      card.classList.add('info');
      card.append(el('p', 'hint', 'Its answer arrives out of band (respond_via: ' + (r.respond_via || []).join(', ') + '): shown for information.'));
      for (const o of r.options) card.append(el('span', 'badge', o.label));
      return card;
    }
    const out = el('p', 'outcome');
    out.setAttribute('role', 'status');
    const send = (answer) => command('/console/api/respond', { source: item.source, session: item.session, request: r.id, answer }, out);
    const form = el('form');
    form.noValidate = true; // the agent decides what is valid (AEP-0006) and says so in its nack
    if (r.fields.length) {
      const read = r.fields.map((f) => field(form, f));
      const submit = el('button', null, 'Submit');
      submit.type = 'submit';
      form.append(el('div', 'row', submit));
      form.addEventListener('submit', (e) => {
        e.preventDefault();
        // own members whatever the ids are (an id `__proto__` stays a member)
        const values = Object.fromEntries(read.map(([id, get]) => [id, get()]).filter(([, v]) => v !== undefined));
        send({ values });
      });
    } else {
      const buttons = el('div', 'row');
      for (const o of r.options) {
        const b = el('button', null, o.label);
        b.type = 'button';
        b.dataset.option = o.id;
        b.addEventListener('click', () => send({ option: o.id }));
        buttons.append(b);
      }
      const text = el('input');
      text.name = 'text';
      text.setAttribute('aria-label', 'Answer as text');
      text.placeholder = r.options.length ? 'or answer in words' : 'your answer';
      const go = el('button', null, 'Send text');
      go.type = 'submit';
      form.append(buttons, el('div', 'row', text, go));
      form.addEventListener('submit', (e) => {
        e.preventDefault();
        if (text.value) send({ text: text.value });
      });
    }
    card.append(form, out);
    return card;
  }

  // One AEP-0006 field as a control, and how its answer is read back. A control's
  // `name` is the page's own, never the field's id: a named control becomes a member
  // of its form (an id `append` or `addEventListener` would replace the form's own).
  function field(form, f) {
    const id = f.id;
    const name = 'f' + (++names);
    const box = el('div', 'field');
    const label = el('span', f.required ? 'req' : null, f.label);
    label.id = 'l-' + Math.random().toString(36).slice(2);
    box.append(label);
    let get;
    const input = (type) => {
      const i = el('input');
      i.type = type;
      i.name = name;
      i.dataset.field = id;
      i.setAttribute('aria-labelledby', label.id);
      if (f.required) i.setAttribute('aria-required', 'true');
      return i;
    };
    if (f.type === 'number') {
      const i = input('number');
      i.step = 'any';
      if (f.min !== undefined) i.min = f.min;
      if (f.max !== undefined) i.max = f.max;
      box.append(i);
      get = () => (i.value === '' ? undefined : Number(i.value));
    } else if (f.type === 'boolean') {
      const i = input('checkbox');
      box.append(el('label', 'row', i, 'yes'));
      get = () => i.checked;
    } else if (f.type === 'select') {
      const choices = f.choices || [];
      const group = el('div', 'row');
      group.setAttribute('role', f.multi ? 'group' : 'radiogroup');
      group.setAttribute('aria-labelledby', label.id);
      const picks = choices.map((c) => {
        const i = input(f.multi ? 'checkbox' : 'radio');
        i.value = c.id;
        group.append(el('label', null, i, ' ' + c.label));
        return i;
      });
      box.append(group);
      let other = null;
      if (f.other) {
        other = input('text');
        other.placeholder = 'other';
        other.removeAttribute('aria-labelledby');
        other.setAttribute('aria-label', f.label + ': other');
        box.append(other);
      }
      get = () => {
        const chosen = picks.filter((i) => i.checked).map((i) => i.value);
        if (other && other.value) chosen.push(other.value);
        if (!chosen.length) return undefined;
        return f.multi ? chosen : chosen[0];
      };
    } else {
      const i = input('text');
      box.append(i);
      get = () => (i.value === '' ? undefined : i.value);
    }
    form.append(box);
    return [id, get];
  }

  async function command(url, body, out) {
    out.className = 'outcome';
    out.textContent = 'sending…';
    let res, answer = {};
    try {
      res = await fetch(url, { method: 'POST', headers: Object.assign({ 'Content-Type': 'application/json' }, auth()), body: JSON.stringify(body) });
    } catch (e) {
      out.className = 'outcome bad';
      out.textContent = 'not sent: ' + e.message;
      return;
    }
    if (res.status === 401) {
      out.textContent = '';
      return login(true);
    }
    answer = await res.json().catch(() => ({}));
    if (answer.outcome === 'accepted') {
      out.className = 'outcome ok';
      out.textContent = 'accepted by the agent (ack ' + answer.ack + ')';
    } else if (answer.outcome === 'rejected') {
      out.className = 'outcome bad';
      out.textContent = 'rejected by the ' + answer.by + ': ' + answer.reason + (answer.detail ? ': ' + answer.detail : '');
    } else {
      out.className = 'outcome bad';
      out.textContent = (answer.error || ('HTTP ' + res.status)) + (answer.detail ? ': ' + answer.detail : '');
    }
  }

  // ---- the roster ---------------------------------------------------------------------------
  function renderRoster() {
    rosterDirty = false;
    const tbody = $('#roster tbody');
    tbody.replaceChildren(...state.roster.map((g) => {
      const tr = el('tr',
        null,
        el('td', null, g.agent || '–'),
        el('td', null, g.instance || '–'),
        el('td', null, g.sessions.slice(0, 20).join(', ') + (g.sessions.length > 20 ? ' (+' + (g.sessions.length - 20) + ')' : '')),
        el('td', null, g.accepts ? g.accepts.join(', ') : 'undeclared'));
      tr.dataset.agent = g.agent || '';
      return tr;
    }));
    $('#count-roster').textContent = state.roster.length;
  }

  // ---- the frame of the page ----------------------------------------------------------------
  // The relay answered 401: the token it was sent (if any) is wrong, so it is
  // forgotten, and the form asks for one.
  function login(refused) {
    if (live) live.abort();
    const wrong = refused && token;
    token = null;
    sessionStorage.removeItem('aep-token');
    setStatus(wrong ? 'the relay refused the token' : 'the relay wants its token', true);
    $('#login-error').textContent = wrong ? 'The relay refused that token: check it and try again.' : '';
    $('#login').hidden = false;
    $('#token').value = '';
    $('#token').focus();
  }

  function show(view) {
    for (const b of document.querySelectorAll('.tab')) b.setAttribute('aria-pressed', String(b.dataset.view === view));
    for (const v of ['sessions', 'inbox', 'roster']) $('#view-' + v).hidden = v !== view;
  }

  const themes = ['auto', 'light', 'dark'];
  function theme(name) {
    if (name === 'auto') delete document.documentElement.dataset.theme;
    else document.documentElement.dataset.theme = name;
    localStorage.setItem('aep-theme', name);
    $('#theme').textContent = 'Theme: ' + name;
  }

  document.addEventListener('DOMContentLoaded', () => {
    theme(localStorage.getItem('aep-theme') || 'auto');
    $('#theme').addEventListener('click', () => {
      const now = localStorage.getItem('aep-theme') || 'auto';
      theme(themes[(themes.indexOf(now) + 1) % themes.length]);
    });
    for (const b of document.querySelectorAll('.tab')) b.addEventListener('click', () => show(b.dataset.view));
    $('#login').addEventListener('submit', (e) => {
      e.preventDefault();
      token = $('#token').value;
      sessionStorage.setItem('aep-token', token);
      $('#login').hidden = true;
      $('#login-error').textContent = '';
      connect();
    });
    let typing = 0;
    $('#filters').addEventListener('input', () => {
      clearTimeout(typing);
      typing = setTimeout(connect, 300);
    });
    $('#filters').addEventListener('submit', (e) => e.preventDefault());
    connect();
  });
})();
