// main.tsx - the Orrery console: the session check, the shell (left
// navigation, top bar) and the route table. Pages other than the dashboard,
// and heavy libraries (graphs, charts), load lazily so the first paint stays
// small.
import { render } from 'preact';
import { lazy, LocationProvider, Route, Router } from 'preact-iso';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, setUnauthorizedHandler, type Me } from './api';
import { Link, Loading, Toasts, useScrollFocus } from './components/ui';
import { DashboardPage } from './pages/dashboard';
import { LoginPage } from './pages/login';
import { BASE, SCOPE, useRoute } from './router';
import { SessionContext } from './session';
import './styles.css';

const NAV = [
  { to: '/dashboard', label: 'Dashboard', icon: '◔' },
  { to: '/tasks', label: 'Tasks', icon: '☰' },
  { to: '/workflows', label: 'Workflows', icon: '⋔' },
  { to: '/instances', label: 'Instances', icon: '▤' },
  { to: '/streams', label: 'Streams', icon: '≋' },
  { to: '/lineage', label: 'Lineage', icon: '⇄' },
  { to: '/packages', label: 'Packages', icon: '▣' },
  { to: '/tokens', label: 'API tokens', icon: '⚷' },
  { to: '/resources', label: 'Resources', icon: '⛁' },
  { to: '/alerts', label: 'Alerts', icon: '⚑' },
  { to: '/calendars', label: 'Calendars', icon: '▦' },
  { to: '/admin/pools', label: 'Admin', icon: '⚙' },
];

// The dashboard (the first page) and the login are in the main bundle; every
// other page is a chunk of its own, fetched when it is first shown, so a cold
// load parses only what the first page needs.
const AlertsPage = lazy(() => import('./pages/alerts').then((m) => m.AlertsPage));
const AdminPage = lazy(() => import('./pages/admin').then((m) => m.AdminPage));
const DesignerPage = lazy(() => import('./pages/designer').then((m) => m.DesignerPage));
const HistoryPage = lazy(() => import('./pages/history').then((m) => m.HistoryPage));
const InstancePage = lazy(() => import('./pages/instance').then((m) => m.InstancePage));
const InstancesPage = lazy(() => import('./pages/instances').then((m) => m.InstancesPage));
const LineagePage = lazy(() => import('./pages/lineage').then((m) => m.LineagePage));
const PackagesPage = lazy(() => import('./pages/packages').then((m) => m.PackagesPage));
const ResourcesPage = lazy(() => import('./pages/resources').then((m) => m.ResourcesPage));
const CalendarsPage = lazy(() => import('./pages/calendars').then((m) => m.CalendarsPage));
const CalendarPage = lazy(() => import('./pages/calendars').then((m) => m.CalendarPage));
const StreamPage = lazy(() => import('./pages/streams').then((m) => m.StreamPage));
const StreamsPage = lazy(() => import('./pages/streams').then((m) => m.StreamsPage));
const TasksPage = lazy(() => import('./pages/tasks').then((m) => m.TasksPage));
const TokensPage = lazy(() => import('./pages/tokens').then((m) => m.TokensPage));
const WorkflowPage = lazy(() => import('./pages/workflow').then((m) => m.WorkflowPage));
const WorkflowsPage = lazy(() => import('./pages/workflows').then((m) => m.WorkflowsPage));
const WorkflowObjectPage = lazy(() => import('./pages/workflows').then((m) => m.WorkflowObjectPage));

/** Pages whose props come from the path. */
const TaskDesigner = ({ id }: { id: string }) => <DesignerPage id={Number(id)} />;
const NewTask = () => <DesignerPage id={null} />;
const WorkflowOf = ({ id }: { id: string }) => <WorkflowPage taskId={Number(id)} />;
const Workflows = () => <WorkflowPage taskId={null} />;
const RunsOf = ({ name }: { name: string }) => <HistoryPage name={name} />;
const WorkflowNamed = ({ name }: { name: string }) => <WorkflowObjectPage name={decodeURIComponent(name)} />;
const InstanceOf = ({ id }: { id: string }) => <InstancePage id={Number(id)} />;
const StreamOf = ({ name }: { name: string }) => <StreamPage name={name} />;
const CalendarNamed = ({ name }: { name: string }) => <CalendarPage name={decodeURIComponent(name)} />;
const AdminTab = ({ tab }: { tab?: string }) => <AdminPage tab={tab ?? 'pools'} />;
const AlertsTab = ({ tab }: { tab?: string }) => <AlertsPage tab={tab ?? 'history'} />;

function NotFound() {
  const { path } = useRoute();
  return (
    <div class="card pad">
      <h1>Page not found</h1>
      <p>
        Nothing lives at <code>{path}</code>. <Link to="/dashboard">Go to the dashboard</Link>.
      </p>
    </div>
  );
}

function Shell({ me, onLogout }: { me: Me; onLogout: () => void }) {
  const p = useRoute().path;
  const active = (to: string) => p === to || p.startsWith(`${to}/`) || (to === '/admin/pools' && p.startsWith('/admin')) || (to === '/workflows' && p.startsWith('/workflow'));
  return (
    <SessionContext.Provider value={me}>
      <div class="shell">
        <nav class="sidenav" aria-label="Main">
          <div class="sidenav-inner">
          <div class="brand">
            <span class="brand-mark" aria-hidden="true">
              ◉
            </span>
            Orrery
          </div>
          {NAV.map((n) => (
            <Link key={n.to} to={n.to} class={`nav-item ${active(n.to) ? 'active' : ''}`} title={n.label} label={n.label} current={active(n.to)}>
              <span class="nav-icon" aria-hidden="true">
                {n.icon}
              </span>
              {n.label}
            </Link>
          ))}
          <div class="nav-spacer" />
          <div class="nav-user">
            <div class="avatar" aria-hidden="true">
              {me.name.slice(0, 1).toUpperCase()}
            </div>
            <div class="nav-user-text">
              <div class="nav-user-name" data-testid="whoami">
                {me.name}
              </div>
              <div class="nav-user-role">
                {me.role}
                {me.teams.length ? ` · ${me.teams.join(', ')}` : ''}
              </div>
            </div>
          </div>
          <button class="btn btn-ghost nav-logout" onClick={onLogout}>
            Log out
          </button>
          </div>
        </nav>
        <main class="content">
          <Router>
            <Route path={BASE} component={DashboardPage} />
            <Route path={`${BASE}/dashboard`} component={DashboardPage} />
            <Route path={`${BASE}/tasks`} component={TasksPage} />
            <Route path={`${BASE}/tasks/new`} component={NewTask} />
            <Route path={`${BASE}/tasks/:id`} component={TaskDesigner} />
            <Route path={`${BASE}/workflow`} component={Workflows} />
            <Route path={`${BASE}/workflow/:id`} component={WorkflowOf} />
            <Route path={`${BASE}/workflows`} component={WorkflowsPage} />
            <Route path={`${BASE}/workflows/:name`} component={WorkflowNamed} />
            <Route path={`${BASE}/workflows/:name/runs`} component={RunsOf} />
            <Route path={`${BASE}/instances`} component={InstancesPage} />
            <Route path={`${BASE}/instances/:id`} component={InstanceOf} />
            <Route path={`${BASE}/streams`} component={StreamsPage} />
            <Route path={`${BASE}/streams/:name`} component={StreamOf} />
            <Route path={`${BASE}/lineage`} component={LineagePage} />
            <Route path={`${BASE}/packages`} component={PackagesPage} />
            <Route path={`${BASE}/tokens`} component={TokensPage} />
            <Route path={`${BASE}/resources`} component={ResourcesPage} />
            <Route path={`${BASE}/calendars`} component={CalendarsPage} />
            <Route path={`${BASE}/calendars/:name`} component={CalendarNamed} />
            <Route path={`${BASE}/admin/:tab?`} component={AdminTab} />
            <Route path={`${BASE}/alerts/:tab?`} component={AlertsTab} />
            <Route default component={NotFound} />
          </Router>
        </main>
      </div>
      <Toasts />
    </SessionContext.Provider>
  );
}

// The session check starts before the first render; index.html preloads its
// answer with the script, so the first page renders at once with the user.
let firstMe: Me | null | undefined;
const session = api.me().then(
  (m) => {
    firstMe = m;
  },
  () => {
    firstMe = null;
  },
);

function App() {
  const [me, setMe] = useState<Me | null | undefined>(firstMe);
  const route = useRoute();
  const { navigate } = route;
  useScrollFocus();
  useEffect(() => {
    setUnauthorizedHandler(() => setMe(null));
    if (firstMe !== undefined) return;
    api.me().then(setMe, (e) => {
      if (e instanceof ApiError && e.status === 401) setMe(null);
      else setMe(null);
    });
  }, []);
  if (me === undefined)
    return (
      <div class="center-page">
        <Loading what="Orrery" />
      </div>
    );
  if (me === null || route.path === '/login')
    return (
      <LoginPage
        onLogin={(u) => {
          setMe(u);
          const next = route.query.get('next');
          navigate(next && next.startsWith('/') && next !== '/login' ? next : '/dashboard', true);
        }}
      />
    );
  const logout = async () => {
    try {
      await api.logout();
    } finally {
      setMe(null);
      navigate('/login', true);
    }
  };
  return <Shell me={me} onLogout={logout} />;
}

void session.then(() =>
  render(
    <LocationProvider scope={SCOPE}>
      <App />
    </LocationProvider>,
    document.getElementById('root')!,
  ),
);
