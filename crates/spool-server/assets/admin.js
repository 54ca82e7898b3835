// Spool admin page: the only script. It refreshes the page's content every
// few seconds without a full reload, so the scroll position stays, and it
// holds off while the reader is busy (a field or button has focus, text is
// selected, a confirmation is open, the tab is hidden). Without it the page
// still works: a <noscript> meta refresh reloads it, more slowly.
(function () {
  'use strict';

  var body = document.body;
  var main = document.getElementById('main');
  var status = document.getElementById('refresh-status');
  var seconds = Number(body.getAttribute('data-refresh'));
  if (!main || !(seconds > 0)) {
    return;
  }

  // A notice from the action before this page ("?done=...") is shown once:
  // refreshes load the page without it.
  var url = new URL(window.location.href);
  if (url.searchParams.has('done')) {
    url.searchParams.delete('done');
    url.searchParams.delete('n');
    window.history.replaceState(null, '', url.pathname + url.search + url.hash);
  }

  function busy() {
    if (document.hidden || document.querySelector('details[open]')) {
      return true;
    }
    var active = document.activeElement;
    if (active && active !== main && main.contains(active) &&
        /^(INPUT|TEXTAREA|SELECT|BUTTON|SUMMARY)$/.test(active.tagName)) {
      return true;
    }
    var selection = window.getSelection ? String(window.getSelection()) : '';
    return selection.length > 0;
  }

  function say(text) {
    if (status) {
      status.textContent = text;
    }
  }

  function clock() {
    return new Date().toISOString().slice(11, 19) + ' UTC';
  }

  function refresh() {
    if (busy()) {
      return later();
    }
    fetch(window.location.href, {
      headers: { Accept: 'text/html' },
      credentials: 'same-origin',
      cache: 'no-store'
    }).then(function (res) {
      if (res.redirected && new URL(res.url).pathname === '/login') {
        say('Logged out: reload the page to log in again.');
        return null;
      }
      if (!res.ok) {
        throw new Error('HTTP ' + res.status);
      }
      return res.text();
    }).then(function (html) {
      if (html === null) {
        return;
      }
      var fresh = new DOMParser().parseFromString(html, 'text/html');
      var next = fresh.getElementById('main');
      if (next && !busy()) {
        main.innerHTML = next.innerHTML;
        document.title = fresh.title;
      }
      say('Updated ' + clock() + '; refreshes every ' + seconds + ' s.');
      later();
    }).catch(function () {
      say('Could not refresh at ' + clock() + '; trying again.');
      later();
    });
  }

  function later() {
    window.setTimeout(refresh, seconds * 1000);
  }

  later();
}());
