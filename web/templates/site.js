"use strict";
(function () {
  var status = document.getElementById("status");
  function say(text) { if (status) { status.textContent = text; } }
  function fallback(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.setAttribute("aria-hidden", "true");
    area.style.position = "absolute";
    area.style.left = "-9999px";
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    document.body.removeChild(area);
    return ok;
  }
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest("button[data-copy]");
    if (!b) { return; }
    var src = document.getElementById(b.getAttribute("data-copy"));
    if (!src) { return; }
    var text = src.textContent;
    function done(ok) {
      b.textContent = ok ? "Copied" : "Select and copy";
      say(ok ? "Copied to the clipboard" : "Copying failed: select the text and copy it");
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(fallback(text)); });
    } else {
      done(fallback(text));
    }
  });
  // The operator view refreshes its live part by itself.
  var live = document.querySelector("[data-refresh]");
  if (live) {
    var every = parseInt(live.getAttribute("data-refresh"), 10) * 1000;
    window.setInterval(function () {
      fetch(live.getAttribute("data-src"), { credentials: "same-origin", redirect: "manual", headers: { "Accept": "text/html" } })
        .then(function (r) { if (!r.ok) { throw new Error(String(r.status)); } return r.text(); })
        .then(function (html) {
          var doc = new DOMParser().parseFromString(html, "text/html");
          var fresh = doc.querySelector("[data-refresh]");
          if (fresh) { live.innerHTML = fresh.innerHTML; }
        })
        .catch(function () { say("The view could not refresh; reload the page to log in again"); });
    }, every);
  }
}());
