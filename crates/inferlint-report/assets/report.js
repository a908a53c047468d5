/* inferlint report: read-outs for the charts, the KV-block replay and the theme switch.
   Everything the run says comes from the JSON in #report-data; nothing here is written
   per report, so the page's Content-Security-Policy can name this script by its hash. */
(function () {
  'use strict';
  var root = document.documentElement;

  /* Any error or refused resource leaves a mark in the page, which the browser test reads. */
  function flag(kind, text) {
    var before = root.getAttribute('data-script-error') || '';
    root.setAttribute('data-script-error', before + kind + ': ' + text + '; ');
  }
  window.addEventListener('error', function (e) { flag('error', e.message); });
  document.addEventListener('securitypolicyviolation', function (e) {
    flag('csp', e.violatedDirective + ' ' + e.blockedURI);
  });

  var hash = (window.location.hash || '').slice(1).split(',');
  var wants = function (word) { return hash.indexOf(word) >= 0; };

  /* Theme: the system's, unless the reader picked one (kept in localStorage). */
  var THEME_KEY = 'inferlint-theme';
  function storedTheme() {
    try { return window.localStorage.getItem(THEME_KEY); } catch (e) { return null; }
  }
  function storeTheme(value) {
    try { window.localStorage.setItem(THEME_KEY, value); } catch (e) { /* private mode */ }
  }
  function effectiveTheme() {
    var set = root.getAttribute('data-theme');
    if (set === 'dark' || set === 'light') { return set; }
    return window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
  }
  var initialTheme = wants('dark') ? 'dark' : (wants('light') ? 'light' : storedTheme());
  if (initialTheme === 'dark' || initialTheme === 'light') { root.setAttribute('data-theme', initialTheme); }
  var toggle = document.getElementById('theme-toggle');
  function labelToggle() {
    if (!toggle) { return; }
    var dark = effectiveTheme() === 'dark';
    toggle.textContent = dark ? 'Light' : 'Dark';
    toggle.setAttribute('aria-pressed', dark ? 'true' : 'false');
    toggle.setAttribute('aria-label', dark ? 'Switch to the light theme' : 'Switch to the dark theme');
  }
  labelToggle();

  var data = JSON.parse(document.getElementById('report-data').textContent);
  var count = data.t ? data.t.length : 0;

  function pick(series, kind, i) {
    if (!series) { return null; }
    var list = series.v || series[kind];
    var v = list ? list[i] : null;
    return v === undefined ? null : v;
  }
  function number(v, digits) {
    return v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  }
  function range(series, i, digits) {
    var lo = pick(series, 'min', i), hi = pick(series, 'max', i);
    if (lo === null || hi === null) { return null; }
    var a = number(lo, digits), b = number(hi, digits);
    return a === b ? a : a + '\u2013' + b;
  }
  function round(v, digits) {
    var scale = Math.pow(10, digits);
    return Math.round(v * scale) / scale;
  }
  /* The same wording as the page's axes (words::moment in the report crate). */
  function moment(s) {
    var span = data.span || 0;
    if (span < 600) { return round(s, 2) + ' s'; }
    if (span < 4 * 3600) {
      var whole = Math.round(s);
      return whole % 60 === 0 ? (whole / 60) + ' min' : Math.floor(whole / 60) + ' min ' + (whole % 60) + ' s';
    }
    var minutes = Math.round(s / 60);
    var hours = Math.floor(minutes / 60);
    return minutes % 60 === 0 ? hours + ' h' : hours + ' h ' + (minutes % 60) + ' min';
  }
  function when(i) {
    var from = moment(data.t[i]), to = moment(data.t_last[i]);
    return data.downsampled && from !== to ? 'From ' + from + ' to ' + to : 'At ' + from;
  }
  function plural(n, word) { return n + ' ' + word + (n === 1 ? '' : 's'); }

  var readers = {
    requests: function (i) {
      var parts = [];
      var running = range(data.running, i, 0);
      var waiting = range(data.waiting, i, 0);
      var fit = range(data.fit, i, 0);
      if (running !== null) { parts.push(running + ' running'); }
      if (waiting !== null) { parts.push(waiting + ' waiting'); }
      if (fit !== null) { parts.push(fit + ' fit in the cache'); }
      if (data.pre && data.pre[i] > 0) {
        parts.push(plural(data.pre[i], data.preemption_word) + (data.downsampled ? ' in this stretch' : ' here'));
      }
      return when(i) + ': ' + (parts.length ? parts.join(', ') : 'no reading') + '.';
    },
    kv: function (i) {
      var kv = range(data.kv, i, 1);
      return when(i) + ': ' + (kv === null ? 'no reading' : 'KV cache ' + kv + '% in use') + '.';
    },
    tput: function (i) {
      var rate = range(data.tput, i, 0);
      return when(i) + ': ' + (rate === null ? 'no rate yet (it needs a full second of readings)' : rate + ' output tokens/s') + '.';
    }
  };

  function nearest(t) {
    var lo = 0, hi = count - 1;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (data.t[mid] < t) { lo = mid + 1; } else { hi = mid; }
    }
    if (lo > 0 && Math.abs(data.t[lo - 1] - t) <= Math.abs(data.t[lo] - t)) { return lo - 1; }
    return lo;
  }

  Array.prototype.forEach.call(document.querySelectorAll('.plot[data-chart]'), function (plot) {
    var kind = plot.getAttribute('data-chart');
    var left = Number(plot.getAttribute('data-left'));
    var width = Number(plot.getAttribute('data-width'));
    var span = Number(plot.getAttribute('data-span')) || 1;
    var from = Number(plot.getAttribute('data-from')) || 0;
    var svg = plot.querySelector('svg');
    var cursor = svg.querySelector('.cursor');
    var out = plot.nextElementSibling;
    var index = -1;
    if (!count || !readers[kind]) { return; }
    function show(i) {
      index = Math.max(0, Math.min(count - 1, i));
      var share = Math.max(0, Math.min(1, (data.t[index] - from) / span));
      var x = (left + share * width).toFixed(1);
      cursor.setAttribute('x1', x);
      cursor.setAttribute('x2', x);
      cursor.setAttribute('visibility', 'visible');
      out.textContent = readers[kind](index);
      plot.setAttribute('data-index', String(index));
    }
    plot.addEventListener('pointermove', function (e) {
      var box = svg.getBoundingClientRect();
      if (!box.width) { return; }
      var x = (e.clientX - box.left) / box.width * 960;
      show(nearest(from + (x - left) / width * span));
    });
    plot.addEventListener('pointerleave', function () { cursor.setAttribute('visibility', 'hidden'); });
    plot.addEventListener('focus', function () { if (index < 0) { show(0); } });
    plot.addEventListener('keydown', function (e) {
      var page = Math.max(1, Math.round(count / 20));
      var step = e.shiftKey ? page : 1;
      var from = index < 0 ? 0 : index;
      switch (e.key) {
        case 'ArrowRight': case 'ArrowUp': show(index < 0 ? 0 : from + step); break;
        case 'ArrowLeft': case 'ArrowDown': show(from - step); break;
        case 'PageUp': show(from + page); break;
        case 'PageDown': show(from - page); break;
        case 'Home': show(0); break;
        case 'End': show(count - 1); break;
        default: return;
      }
      e.preventDefault();
    });
  });

  /* The KV-block replay. */
  var slider = document.getElementById('rp-slider');
  var playButton = document.getElementById('rp-play');
  var canvas = document.getElementById('rp-canvas');
  var frame = 0;
  var timer = null;
  var maxEach = 1;
  if (slider && count) {
    for (var k = 0; k < count; k++) {
      var r = pick(data.running, 'last', k);
      var u = data.used[k];
      if (r > 0 && u !== null) { maxEach = Math.max(maxEach, u / r); }
    }
  }
  function text(id, value) {
    var el = document.getElementById(id);
    if (el) { el.textContent = value; }
  }
  function frameFacts(i) {
    var running = pick(data.running, 'last', i);
    var waiting = pick(data.waiting, 'last', i);
    var used = data.used[i];
    return {
      t: data.t_last[i],
      running: running === null ? 0 : Math.round(running),
      waiting: waiting === null ? 0 : Math.round(waiting),
      used: used === null ? 0 : used,
      pushed: data.pre[i] || 0,
      soFar: data.pre_so_far[i]
    };
  }
  function css(name) { return getComputedStyle(root).getPropertyValue(name).trim() || '#888'; }

  function drawReplay() {
    if (!canvas || !slider || !count) { return; }
    var f = frameFacts(frame);
    var ctx = canvas.getContext('2d');
    var W = 960, H = 440;
    var ratio = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(W * ratio)) {
      canvas.width = Math.round(W * ratio);
      canvas.height = Math.round(H * ratio);
    }
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, W, H);
    var fg = css('--fg'), muted = css('--muted'), running = css('--running'), waitingColor = css('--waiting');
    var mark = css('--mark'), free = css('--cell-free'), line = css('--cell-line');
    ctx.font = '13px system-ui, sans-serif';
    ctx.textBaseline = 'alphabetic';

    /* Towers: each running request, its even share of the blocks in use. */
    var each = f.running > 0 ? f.used / f.running : 0;
    var towerTop = 24, towerBase = 236;
    var unit = Math.min(24, (towerBase - towerTop) / Math.max(maxEach, 1));
    var slot = Math.min(44, (W - 20) / Math.max(f.running, 1));
    var towerWidth = Math.max(2, slot - Math.min(8, slot * 0.25));
    ctx.fillStyle = muted;
    ctx.fillText(f.running > 0 ? 'Running: ' + f.running + ', ' + round(each, 1) + ' each' : 'Running: none', 10, 16);
    /* No loop runs as long as a number from the recording says: at most one tower per
       two pixels of width, and at most one block per pixel of height. */
    var towers = Math.min(f.running, Math.floor((W - 20) / 2));
    for (var i = 0; i < towers; i++) {
      var x = 10 + i * slot;
      ctx.globalAlpha = i % 2 === 0 ? 1 : 0.7;
      ctx.fillStyle = running;
      var whole = Math.min(Math.floor(each), towerBase - towerTop);
      for (var b = 0; b < whole; b++) {
        ctx.fillRect(x, towerBase - (b + 1) * unit + 1, towerWidth, Math.max(1, unit - 2));
      }
      var part = each - whole;
      if (part > 0.001) {
        ctx.fillRect(x, towerBase - whole * unit - part * unit + 1, towerWidth, Math.max(1, part * unit - 2));
      }
      ctx.globalAlpha = 1;
    }
    ctx.strokeStyle = line;
    ctx.beginPath(); ctx.moveTo(6, towerBase + 0.5); ctx.lineTo(W - 6, towerBase + 0.5); ctx.stroke();

    /* Waiting tiles; the ones just pushed back are outlined. */
    var tile = 14, gap = 4, perRow = Math.floor((W - 110) / (tile + gap));
    ctx.fillStyle = muted;
    ctx.fillText('Waiting: ' + f.waiting, 10, 266);
    var shown = Math.min(f.waiting, perRow);
    var pushed = Math.min(f.pushed, f.waiting);
    for (var w = 0; w < shown; w++) {
      var tx = 100 + w * (tile + gap), ty = 254;
      if (w >= shown - pushed) {
        ctx.fillStyle = free;
        ctx.fillRect(tx, ty, tile, tile);
        ctx.strokeStyle = mark;
        ctx.lineWidth = 2.5;
        ctx.strokeRect(tx + 1, ty + 1, tile - 2, tile - 2);
        ctx.lineWidth = 1;
      } else {
        ctx.fillStyle = waitingColor;
        ctx.fillRect(tx, ty, tile, tile);
      }
    }
    if (f.waiting > shown) {
      ctx.fillStyle = muted;
      ctx.fillText('+' + (f.waiting - shown) + ' more', 100 + shown * (tile + gap) + 4, 266);
    }

    /* The grid of usable blocks (or percent cells). */
    var cells = data.cells, top = 286, height = H - top - 6;
    var size = Math.max(3, Math.min(30, Math.floor(Math.sqrt((W - 20) * height / cells))));
    var cols, rows;
    for (;;) {
      cols = Math.max(1, Math.floor((W - 20) / size));
      rows = Math.ceil(cells / cols);
      if (rows * size <= height || size <= 3) { break; }
      size -= 1;
    }
    var used = Math.min(f.used, cells);
    for (var c = 0; c < cells; c++) {
      var cx = 10 + (c % cols) * size, cy = top + Math.floor(c / cols) * size;
      if (c < used) {
        var owner = each > 0 ? Math.floor(c / each) : 0;
        ctx.globalAlpha = owner % 2 === 0 ? 1 : 0.7;
        ctx.fillStyle = running;
        ctx.fillRect(cx + 1, cy + 1, size - 2, size - 2);
        ctx.globalAlpha = 1;
      } else {
        ctx.fillStyle = free;
        ctx.fillRect(cx + 1, cy + 1, size - 2, size - 2);
        ctx.strokeStyle = f.waiting > 0 ? mark : line;
        ctx.strokeRect(cx + 1.5, cy + 1.5, size - 3, size - 3);
      }
    }
    ctx.fillStyle = fg;
  }

  function describe(f) {
    var unitWord = data.blocks ? 'block' : 'percent cell';
    return 'At ' + moment(f.t) + ': ' + f.running + ' running, holding ' + plural(f.used, unitWord) +
      ' of ' + data.cells + (f.running > 0 ? ' (' + round(f.used / f.running, 1) + ' each)' : '') +
      '; ' + f.waiting + ' waiting' +
      (f.pushed > 0 ? '; ' + plural(f.pushed, data.preemption_word) + ' just now' : '') + '.';
  }

  function showFrame(i, announce) {
    frame = Math.max(0, Math.min(count - 1, i));
    var f = frameFacts(frame);
    slider.value = String(frame);
    slider.setAttribute('aria-valuetext', moment(f.t) + ', ' + f.running + ' running, ' + f.waiting + ' waiting');
    text('rp-t', round(f.t, 1).toFixed(1));
    text('rp-running', String(f.running));
    text('rp-waiting', String(f.waiting));
    text('rp-each', f.running > 0 ? String(round(f.used / f.running, 1)) : '\u2013');
    text('rp-pre', f.soFar === null ? '\u2013' : String(f.soFar));
    text('rp-used', f.used + ' in use, ' + Math.max(0, data.cells - f.used) + ' free');
    if (announce) { text('rp-desc', describe(f)); }
    drawReplay();
  }

  function stop() {
    if (timer !== null) { window.clearInterval(timer); timer = null; }
    playButton.textContent = 'Play';
    playButton.setAttribute('aria-pressed', 'false');
    showFrame(frame, true);
  }
  function play() {
    if (frame >= count - 1) { frame = 0; }
    playButton.textContent = 'Pause';
    playButton.setAttribute('aria-pressed', 'true');
    var delay = Math.max(40, Math.min(400, 20000 / Math.max(count, 1)));
    timer = window.setInterval(function () {
      if (frame >= count - 1) { stop(); return; }
      showFrame(frame + 1, false);
    }, delay);
  }
  if (slider && playButton && count) {
    slider.addEventListener('input', function () {
      if (timer !== null) { window.clearInterval(timer); timer = null; playButton.textContent = 'Play'; playButton.setAttribute('aria-pressed', 'false'); }
      showFrame(Number(slider.value), true);
    });
    playButton.addEventListener('click', function () { if (timer === null) { play(); } else { stop(); } });
    /* `#t=16` in the address opens the replay at 16 s into the run. */
    var start = 0;
    hash.forEach(function (word) {
      if (word.indexOf('t=') === 0 && isFinite(Number(word.slice(2)))) { start = nearest(Number(word.slice(2))); }
    });
    showFrame(start, true);
  }

  if (toggle) {
    toggle.addEventListener('click', function () {
      var next = effectiveTheme() === 'dark' ? 'light' : 'dark';
      root.setAttribute('data-theme', next);
      storeTheme(next);
      labelToggle();
      drawReplay();
    });
  }

  /* With #test in the address, step the replay and a chart the way a reader would and
     leave what they showed in data- attributes (the browser test reads them). */
  if (wants('test')) {
    if (slider && count) {
      var target = 0;
      while (target < count - 1 && !(pick(data.waiting, 'last', target) > 0)) { target++; }
      slider.value = String(target);
      slider.dispatchEvent(new Event('input', { bubbles: true }));
      root.setAttribute('data-test-replay', [
        'frame=' + target,
        'running=' + document.getElementById('rp-running').textContent,
        'waiting=' + document.getElementById('rp-waiting').textContent,
        'used=' + data.used[target],
        'each=' + document.getElementById('rp-each').textContent
      ].join(';'));
    }
    var requests = document.querySelector('#fig-requests .plot');
    if (requests) {
      requests.focus();
      ['End', 'ArrowLeft'].forEach(function (key) {
        requests.dispatchEvent(new KeyboardEvent('keydown', { key: key, bubbles: true }));
      });
      root.setAttribute('data-test-chart', 'index=' + requests.getAttribute('data-index') + ';' +
        requests.nextElementSibling.textContent);
    }
    root.setAttribute('data-test-ready', '1');
    if (playButton && count) {
      showFrame(0, false);
      playButton.click();
      window.setTimeout(function () {
        root.setAttribute('data-test-played', String(frame));
        if (timer !== null) { playButton.click(); }
      }, 1000);
    }
  }
})();
