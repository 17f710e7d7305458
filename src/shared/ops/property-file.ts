/**
 * The properties a Run Job stage captures from its pod's log ("Capture output from: logs"), as Clouddriver's
 * PropertyParser reads them: a line `SPINNAKER_PROPERTY_<NAME>=<value>` sets `<name>` (lower-cased) to the trimmed
 * value, and a line starting with `SPINNAKER_CONFIG_JSON=` merges the JSON object that follows. Later lines win.
 *
 * Where Clouddriver's parser is fragile we are lenient, on purpose (docs/clouddriver-compatibility.md, Jobs): the
 * value is everything after the first `=` (Clouddriver cuts it at a second `=`, losing `a=b=c`'s `=c`), text before
 * the marker (a timestamp prefix) is not part of the name, an empty value is '' instead of failing the whole read,
 * and a JSON line that does not parse to an object is skipped instead of failing the whole read.
 */
const PROPERTY = 'SPINNAKER_PROPERTY_';
const CONFIG_JSON = /^\s*SPINNAKER_CONFIG_JSON=(.*)$/;

export function parsePropertyFile(log: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const raw of log.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const json = CONFIG_JSON.exec(line);
    if (json) {
      const value = parseObject(json[1]!);
      if (value) Object.assign(out, value);
      continue;
    }
    const at = line.indexOf(PROPERTY);
    if (at < 0) continue;
    const rest = line.slice(at + PROPERTY.length);
    const eq = rest.indexOf('=');
    if (eq <= 0) continue;
    out[rest.slice(0, eq).toLowerCase()] = rest.slice(eq + 1).trim();
  }
  return out;
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
