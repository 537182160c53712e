// node20.mjs: lets the conformance suite start on Node.js 20, whose fs has
// no globSync (added in Node.js 22). The suite imports it at start-up but
// uses it only in its tier-check command, which the runner does not call.
// Loaded with `node --import`; it sends the suite's imports of fs to
// fs-with-glob.mjs, which adds a globSync to the real module.
import { register } from 'node:module';

register(new URL('data:text/javascript,' + encodeURIComponent(`
const shim = ${JSON.stringify(new URL('./fs-with-glob.mjs', import.meta.url).href)};
export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL &&
      context.parentURL.includes('/@modelcontextprotocol/conformance/')) {
    return { url: shim, shortCircuit: true };
  }
  return next(specifier, context);
}`)));
