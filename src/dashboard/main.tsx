/** The dashboard's entry point (README "Dashboard"): header, token form and the view the hash names. */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { answerServerRequest, onTokenRequest, OWN_SERVER, SERVER, serverRequest, type ServerRequest, type TokenRequest } from './api';
import { useRoute } from './router';
import { WorkflowsView } from './views/workflows';
import { WorkflowView } from './views/workflow';
import { WorkersView } from './views/workers';
import { HistoryView } from './views/history';
import { SecretsView } from './views/secrets';
import { NotificationsView } from './views/notifications';
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
        {SERVER !== OWN_SERVER && (
          <p>
            It will be sent to <strong>{SERVER}</strong>.
          </p>
        )}
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

/**
 * A `?server=` link, answered before anything is sent: the server it names would get every request
 * and any token typed here, and the link may come from anyone.
 */
function ServerConfirm({ req, onAnswer }: { req: ServerRequest; onAnswer: () => void }) {
  const answer = (connect: boolean) => {
    answerServerRequest(connect);
    onAnswer();
  };
  return (
    <div class="overlay">
      <div class="token-form" role="dialog" aria-modal="true" aria-label="Connect to another server?">
        <h2>Connect to another server?</h2>
        {req.address === null ? (
          <p>
            The link asks for the server <code>{req.given}</code>, which is not an http or https address.
          </p>
        ) : (
          <p>
            The link asks this page to talk to <strong class="server-name">{req.address}</strong> instead of <code>{SERVER}</code>. That
            server would receive every request of this page and any token you type here. Connect only if you trust it.
          </p>
        )}
        <p>
          {req.address !== null && (
            <>
              <button type="button" onClick={() => answer(true)}>
                Connect
              </button>{' '}
            </>
          )}
          <button type="button" autoFocus onClick={() => answer(false)}>
            Stay on {SERVER}
          </button>
        </p>
      </div>
    </div>
  );
}

function App() {
  const route = useRoute();
  const [ask, setAsk] = useState<TokenRequest | null>(null);
  const [serverAsk, setServerAsk] = useState(serverRequest);
  useEffect(() => onTokenRequest(setAsk), []);
  if (serverAsk) return <ServerConfirm req={serverAsk} onAnswer={() => setServerAsk(serverRequest())} />;
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
          <a href="#/secrets" aria-current={route.view === 'secrets' ? 'page' : undefined}>
            Secrets
          </a>
          <a href="#/notifications" aria-current={route.view === 'notifications' ? 'page' : undefined}>
            Notifications
          </a>
        </nav>
        <span class="server" title="Choose another with ?server=URL">
          {SERVER}
        </span>
      </header>
      {SERVER !== OWN_SERVER && (
        <p class="other-server" role="status">
          Connected to <strong>{SERVER}</strong>, not to the server of this page. <a href="?server=">Back to {OWN_SERVER}</a>
        </p>
      )}
      <main>
        {route.view === 'workflows' && <WorkflowsView query={route.query} />}
        {route.view === 'workflow' && <WorkflowView route={route} />}
        {route.view === 'runs' && <HistoryView id={route.id} page={route.page} />}
        {route.view === 'workers' && <WorkersView />}
        {route.view === 'secrets' && <SecretsView />}
        {route.view === 'notifications' && <NotificationsView query={route.query} />}
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
