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
  const limitField = (k: string, label: string, placeholder: string) => (
    <label key={k}>
      {label}
      <input
        value={limits[k] ?? ""}
        onChange={(e) => setLimits({ ...limits, [k]: e.target.value })}
        placeholder={placeholder}
        inputMode="numeric"
        data-testid={`limit-${k}`}
      />
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
      setError((e as Error).message);
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
          {limitField("timeout_secs", "Seconds per attempt", "120")}
          {limitField("attempts", "Attempts per call", "3")}
          {limitField("max_model_secs", "Model seconds per run", "no limit")}
          {limitField("max_reply_bytes", "Largest reply (bytes)", "262144")}
          {limitField("max_cost", "Cost per run, at most (at the prices below)", "no limit")}
          {ROLES.map(([r, d]) => limitField(`tokens.${r}`, `Reply budget: ${r} (tokens)`, String(d)))}
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
                  inputMode="decimal"
                />
              ))}
              <button onClick={() => setPrices(prices.filter((_, j) => j !== i))}>Remove</button>
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
