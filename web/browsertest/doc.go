// Package browsertest loads the gateway's web pages (the connect page and
// the operator view, package web) in headless Chromium, driven by
// chromedp: it logs in through the test issuer, clicks a copy button and
// an end button, saves screenshots, fails on any console error, and checks
// the accessibility basics (every control labelled, a narrow screen, text
// contrast). It is a module of its own, as bench/ is, so the product's
// go.mod carries none of its dependencies.
package browsertest
