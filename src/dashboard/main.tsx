/** The dashboard's entry point (README "Dashboard"): header, token form and the view the hash names. */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { SERVER, onTokenRequest, type TokenRequest } from './api';
import { useRoute } from './router';
import { WorkflowsView } from './views/workflows';
import { WorkflowView } from './views/workflow';
import { WorkersView } from './views/workers';
import './styles.css';

function TokenForm({ req }: { req: TokenRequest }) {
  const [value, setValue] = useState('');
  return (
    <div class="overlay">
      <form
        class="token-form"
        aria-label="Token"
        onSubmit={(e) => {
          e.preventDefault();
          if (value.trim() !== '') req.submit(value);
        }}
      >
        <h2>Token</h2>
        <p>
          {req.reason === 'rejected' ? 'The server did not accept that token.' : 'This server requires a token.'} Enter one with
          the <code>read</code> role (or <code>admin</code> to start and cancel runs). It is kept for this browser tab only.
        </p>
        <label>
          Token{' '}
          <input type="password" name="token" autoFocus autoComplete="off" value={value} onInput={(e) => setValue(e.currentTarget.value)} />
        </label>{' '}
        <button type="submit">Use token</button>
      </form>
    </div>
  );
}

function App() {
  const route = useRoute();
  const [ask, setAsk] = useState<TokenRequest | null>(null);
  useEffect(() => onTokenRequest(setAsk), []);
  return (
    <>
      <header class="top">
        <a class="brand" href="#/">
          weft
        </a>
        <nav>
          <a href="#/" aria-current={route.view === 'workflows' ? 'page' : undefined}>
            Workflows
          </a>
          <a href="#/workers" aria-current={route.view === 'workers' ? 'page' : undefined}>
            Workers
          </a>
        </nav>
        <span class="server" title="Choose another with ?server=URL">
          {SERVER}
        </span>
      </header>
      <main>
        {route.view === 'workflows' && <WorkflowsView query={route.query} />}
        {route.view === 'workflow' && <WorkflowView route={route} />}
        {route.view === 'workers' && <WorkersView />}
        {route.view === 'unknown' && (
          <p class="error">
            No page at <code>{route.path}</code>. <a href="#/">All workflows</a>
          </p>
        )}
      </main>
      {ask && <TokenForm req={ask} />}
    </>
  );
}

render(<App />, document.getElementById('app')!);
