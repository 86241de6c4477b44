// Settings: the database path (applies at the next start), the LLM endpoint,
// model and model-call limits (apply to the next launch), and the API key: kept in the
// operating system's keychain (or taken from the environment), never in the
// database or the settings file, and never shown again once saved.
import { useQuery } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { api } from "../api";
import { ErrorNote } from "../components/common";
import type { CallRole } from "../generated/CallRole";
import type { LlmCheck } from "../generated/LlmCheck";
import type { LlmLimits } from "../generated/LlmLimits";
import type { ModelPrice } from "../generated/ModelPrice";
import type { SettingsView } from "../generated/SettingsView";

/** The roles whose reply budget a person may set, with their defaults. */
const ROLES: [CallRole, number][] = [
  ["proposer", 2048],
  ["executor", 3072],
  ["verifier", 768],
  ["decomposer", 1024],
  ["supervisor", 384],
  ["ideation", 1024],
];

/** The limit fields: the name the server knows each by, its label, its default, whether whole. */
const LIMITS: { key: string; label: string; placeholder: string; whole: boolean }[] = [
  { key: "timeout_secs", label: "Seconds per attempt", placeholder: "120", whole: false },
  { key: "attempts", label: "Attempts per call", placeholder: "3", whole: true },
  { key: "max_model_secs", label: "Model seconds per run", placeholder: "no limit", whole: false },
  { key: "max_reply_bytes", label: "Largest reply (bytes)", placeholder: "262144", whole: true },
  { key: "max_cost", label: "Cost per run, at most (at the prices below)", placeholder: "no limit", whole: false },
  ...ROLES.map(([r, d]) => ({ key: `tokens.${r}`, label: `Reply budget: ${r} (tokens)`, placeholder: String(d), whole: true })),
];

/** What is wrong with a limit field's text before it is sent, if anything. */
function typedWrong(text: string, whole: boolean): string | null {
  const t = text.trim();
  if (t === "") return null;
  const n = Number(t);
  if (!Number.isFinite(n)) return `“${t}” is not a number; leave it empty for the default`;
  if (whole && !Number.isInteger(n)) return `must be a whole number, not ${t}`;
  return null;
}

/**
 * A field the server refused, told in the form's words: the server names
 * limits as its settings file does (`max_tokens.proposer`,
 * `prices.big.input_per_million`); the person sees labels.
 */
export function refusedField(message: string): { field: string; text: string } | null {
  const m = message.match(/(?:^|: )(max_tokens\.(\w+)|prices\.(.+)\.(input|output)_per_million|timeout_secs|attempts|max_model_secs|max_reply_bytes|max_cost) (must .*)$/s);
  if (!m) return null;
  const [, name, role, model, side, requirement] = m;
  if (model !== undefined) {
    return { field: `price.${model}.${side}`, text: `${side === "input" ? "Input" : "Output"} price of ${model} ${requirement}` };
  }
  const field = role !== undefined ? `tokens.${role}` : name;
  const label = LIMITS.find((l) => l.key === field)?.label ?? field;
  return { field, text: `${label} ${requirement}` };
}

/**
 * Every field a refusal names (the server gives one per line), and the
 * lines that name none, to be shown as they are.
 */
export function refusedFields(message: string): { wrong: Record<string, string>; texts: string[] } {
  const wrong: Record<string, string> = {};
  const texts: string[] = [];
  for (const line of message.split("\n").filter((l) => l.trim() !== "")) {
    const refused = refusedField(line);
    if (refused) wrong[refused.field] = refused.text;
    texts.push(refused ? refused.text : line);
  }
  return { wrong, texts };
}

/** One row of the model prices table, as typed. */
type PriceRow = { model: string; input: string; output: string };

/** A number field's text as a limit: empty is "the default". */
const num = (text: string): number | null => (text.trim() === "" ? null : Number(text));

export function Settings() {
  const [s, setS] = useState<SettingsView | null>(null);
  const [db, setDb] = useState("");
  const [url, setUrl] = useState("");
  const [model, setModel] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const [check, setCheck] = useState<LlmCheck | null>(null);
  const [testing, setTesting] = useState(false);
  const [key, setKey] = useState("");
  const [limits, setLimits] = useState<Record<string, string>>({});
  const [prices, setPrices] = useState<PriceRow[]>([]);
  const [outside, setOutside] = useState("");
  // Per field, what is wrong with it (typed text, or the server's refusal).
  const [wrong, setWrong] = useState<Record<string, string>>({});

  const show = (v: SettingsView) => {
    setS(v);
    setDb(v.db_path_next_start ?? v.db_path);
    setUrl(v.llm_base_url ?? "");
    setModel(v.llm_model ?? "");
    const l = v.llm_limits;
    const text = (x: number | null | undefined) => (x === null || x === undefined ? "" : String(x));
    setLimits({
      timeout_secs: text(l.timeout_secs),
      attempts: text(l.attempts),
      max_model_secs: text(l.max_model_secs),
      max_reply_bytes: text(l.max_reply_bytes),
      max_cost: text(l.max_cost),
      ...Object.fromEntries(ROLES.map(([r]) => [`tokens.${r}`, text(l.max_tokens?.[r])])),
    });
    setOutside(v.allowed_outside.join("\n"));
    setPrices(
      Object.entries(v.model_prices).map(([m, p]) => ({
        model: m,
        input: String(p?.input_per_million ?? 0),
        output: String(p?.output_per_million ?? 0),
      })),
    );
  };
  const pricesOf = (): Record<string, ModelPrice> =>
    Object.fromEntries(
      prices
        .filter((r) => r.model.trim() !== "")
        .map((r) => [r.model.trim(), { input_per_million: Number(r.input || 0), output_per_million: Number(r.output || 0) }]),
    );
  const setPrice = (i: number, row: Partial<PriceRow>) =>
    setPrices(prices.map((r, j) => (j === i ? { ...r, ...row } : r)));
  const limitsOf = (): LlmLimits => {
    const max_tokens: LlmLimits["max_tokens"] = {};
    for (const [r] of ROLES) {
      const n = num(limits[`tokens.${r}`] ?? "");
      if (n !== null) max_tokens[r] = n;
    }
    const opt = (k: string) => num(limits[k] ?? "");
    return {
      timeout_secs: opt("timeout_secs"),
      attempts: opt("attempts"),
      max_model_secs: opt("max_model_secs"),
      max_reply_bytes: opt("max_reply_bytes"),
      max_cost: opt("max_cost"),
      max_stored_chars: s?.llm_limits.max_stored_chars ?? null,
      max_tokens,
    };
  };
  const limitField = ({ key: k, label, placeholder }: (typeof LIMITS)[number]) => (
    <label key={k}>
      {label}
      <input
        value={limits[k] ?? ""}
        onChange={(e) => {
          setLimits({ ...limits, [k]: e.target.value });
          if (wrong[k] !== undefined) setWrong(({ [k]: _fixed, ...rest }) => rest);
        }}
        placeholder={placeholder}
        inputMode="numeric"
        aria-invalid={wrong[k] !== undefined}
        aria-describedby={wrong[k] !== undefined ? `wrong-${k}` : undefined}
        data-testid={`limit-${k}`}
      />
      {wrong[k] !== undefined && (
        <span className="field-error" id={`wrong-${k}`} data-testid={`wrong-${k}`}>
          {wrong[k]}
        </span>
      )}
    </label>
  );
  // The settings in force, through the app's query cache, read afresh each
  // time the screen opens (a key stored with `attractor key set` meanwhile
  // shows); the form is filled from them once they arrive.
  const loaded = useQuery({ queryKey: ["settings"], queryFn: () => api.settings(), staleTime: 0, gcTime: 0 });
  useEffect(() => {
    if (loaded.data) show(loaded.data);
  }, [loaded.data]);
  useEffect(() => {
    if (loaded.error) setError(loaded.error.message);
  }, [loaded.error]);

  const save = async () => {
    setError(null);
    setSaved(false);
    const typed = Object.fromEntries(
      LIMITS.flatMap(({ key, label, whole }) => {
        const w = typedWrong(limits[key] ?? "", whole);
        return w === null ? [] : [[key, `${label}: ${w}`]];
      }),
    );
    setWrong(typed);
    if (Object.keys(typed).length > 0) {
      setError(`Not saved: ${Object.values(typed).join("; ")}.`);
      return;
    }
    try {
      show(
        await api.update_settings({ update: {
          db_path: db,
          llm_base_url: url,
          llm_model: model,
          llm_limits: limitsOf(),
          model_prices: pricesOf(),
          allowed_outside: outside
            .split("\n")
            .map((f) => f.trim())
            .filter((f) => f !== ""),
        } }),
      );
      setSaved(true);
    } catch (e) {
      const message = (e as Error).message;
      const refused = refusedFields(message);
      setWrong(refused.wrong);
      setError(Object.keys(refused.wrong).length > 0 ? `Not saved: ${refused.texts.join("; ")}.` : message);
    }
  };

  const storeKey = async () => {
    setError(null);
    try {
      show(await api.set_api_key({ request: { key } }));
      setKey("");
    } catch (e) {
      setError((e as Error).message);
    }
  };

  const removeKey = async () => {
    setError(null);
    try {
      show(await api.delete_api_key());
    } catch (e) {
      setError((e as Error).message);
    }
  };

  const test = async () => {
    setTesting(true);
    setCheck(null);
    try {
      setCheck(await api.test_llm());
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setTesting(false);
    }
  };

  if (!s) return <ErrorNote error={error} />;
  return (
    <section>
      <header className="screen-head">
        <h2>Settings</h2>
      </header>
      <div className="card form">
        <label>
          Database
          <input value={db} onChange={(e) => setDb(e.target.value)} spellCheck={false} />
          <span className="hint">
            In use: <code>{s.db_path}</code>
            {s.db_path_next_start && (
              <>
                {" "}
                · <b>{s.db_path_next_start}</b> from the next start
              </>
            )}
          </span>
        </label>
        <label>
          LLM endpoint (OpenAI-compatible)
          <input value={url} onChange={(e) => setUrl(e.target.value)} placeholder={s.effective_base_url} spellCheck={false} />
          <span className="hint">
            Empty: taken from the environment. Now: <code>{s.effective_base_url}</code>
          </span>
        </label>
        <label>
          Model
          <input value={model} onChange={(e) => setModel(e.target.value)} placeholder={s.effective_model ?? "none: heuristics only"} spellCheck={false} />
          <span className="hint">
            Now: <code>{s.effective_model ?? "none — optimize tasks run on heuristics only"}</code>
          </span>
        </label>
        <fieldset className="limits" data-testid="llm-limits">
          <legend>Model calls (empty: the default; a suite's <code>llm:</code> goes over these)</legend>
          {LIMITS.map(limitField)}
        </fieldset>
        <fieldset className="prices" data-testid="model-prices">
          <legend>Model prices per million tokens (a model on this machine is free unless listed)</legend>
          {prices.length > 0 && (
            <div className="price-row muted small" aria-hidden>
              <span>model</span>
              <span>input, per million tokens</span>
              <span>output, per million tokens</span>
              <span />
            </div>
          )}
          {prices.map((r, i) => (
            <div className="price-row" key={i} data-testid="price-row">
              <input
                value={r.model}
                onChange={(e) => setPrice(i, { model: e.target.value })}
                placeholder="model name"
                aria-label="Model name"
                spellCheck={false}
              />
              {(["input", "output"] as const).map((side) => (
                <input
                  key={side}
                  value={r[side]}
                  onChange={(e) => setPrice(i, { [side]: e.target.value })}
                  placeholder={`${side} per million`}
                  aria-label={`${side === "input" ? "Input" : "Output"} price of ${r.model || "the model"}`}
                  aria-invalid={wrong[`price.${r.model.trim()}.${side}`] !== undefined}
                  inputMode="decimal"
                />
              ))}
              <button onClick={() => setPrices(prices.filter((_, j) => j !== i))}>Remove</button>
              {(["input", "output"] as const).map((side) => {
                const w = wrong[`price.${r.model.trim()}.${side}`];
                return w === undefined ? null : (
                  <span key={side} className="field-error" data-testid={`wrong-price-${side}`}>
                    {w}
                  </span>
                );
              })}
            </div>
          ))}
          <button onClick={() => setPrices([...prices, { model: s.effective_model ?? "", input: "", output: "" }])} data-testid="price-add">
            Add a price
          </button>
        </fieldset>
        <label className="field">
          Folders suites may use outside their own (one full path a line; a suite file can never allow this itself)
          <textarea
            rows={3}
            value={outside}
            onChange={(e) => setOutside(e.target.value)}
            placeholder="/home/you/shared-data"
            data-testid="allowed-outside"
          />
        </label>
        <div className="field">
          API key
          <p data-testid="api-key">
            {s.api_key_source === "keychain" ? (
              <>✓ kept in the keychain</>
            ) : s.api_key_present ? (
              <>
                ✓ from the environment (<code>{s.api_key_source}</code>)
              </>
            ) : (
              <>none — local servers such as Ollama need none</>
            )}
          </p>
          {s.keychain_available ? (
            <div className="inline-form">
              <input
                type="password"
                autoComplete="off"
                value={key}
                onChange={(e) => setKey(e.target.value)}
                placeholder={s.api_key_source === "keychain" ? "paste a new key to replace it" : "paste the key"}
                aria-label="API key"
                data-testid="api-key-input"
              />
              <button onClick={storeKey} disabled={!key.trim()} data-testid="api-key-save">
                Save in keychain
              </button>
              {s.api_key_source === "keychain" && (
                <button onClick={removeKey} data-testid="api-key-remove">
                  Remove
                </button>
              )}
            </div>
          ) : null}
          <span className="hint" data-testid="keychain-note">
            {s.keychain_note ??
              "Kept by the operating system's keychain, never in the database or the settings file; ATTRACTOR_LLM_API_KEY in the environment wins over it."}
          </span>
        </div>
        <ErrorNote error={error} />
        {saved && <p className="notice">Saved to {s.settings_file}.</p>}
        {check && (
          <p className={check.ok ? "notice" : "error"} data-testid="llm-check">
            {check.ok
              ? `✓ ${check.model ?? "the model"} at ${check.base_url} answered in ${check.latency_ms} ms: “${check.reply}”`
              : `✗ ${check.error}`}
          </p>
        )}
        <div className="actions">
          <button onClick={test} disabled={testing} title="Sends one tiny request with the saved settings">
            {testing ? "Testing…" : "Test connection"}
          </button>
          <button className="primary" onClick={save}>
            Save
          </button>
        </div>
      </div>
    </section>
  );
}
