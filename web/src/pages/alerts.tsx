// alerts.tsx - the Alerts section of the console: History (what fired and
// where it was sent), Rules (what to watch and where to send it), Channels
// (webhook, email, chat) and Silences, each a page of its own URL
// (/alerts/<section>) linked from a section navigation.
import { Empty, PageHead, SectionNav } from '../components/ui';
import { ChannelsTab } from './alerts-channels';
import { HistoryTab } from './alerts-history';
import { RulesTab } from './alerts-rules';
import { SilencesTab } from './alerts-silences';

const SECTIONS = [
  { id: 'history', label: 'History' },
  { id: 'rules', label: 'Rules' },
  { id: 'channels', label: 'Channels' },
  { id: 'silences', label: 'Silences' },
];

export function AlertsPage({ tab }: { tab: string }) {
  return (
    <div>
      <PageHead title="Alerts" sub="Who hears of failures, late runs and lost executors, and what was sent to them." />
      <div class="admin-sections">
        <SectionNav label="Alerts" items={SECTIONS.map((s) => ({ to: `/alerts/${s.id}`, label: s.label }))} current={`/alerts/${tab}`} />
      </div>
      {tab === 'history' ? (
        <HistoryTab />
      ) : tab === 'rules' ? (
        <RulesTab />
      ) : tab === 'channels' ? (
        <ChannelsTab />
      ) : tab === 'silences' ? (
        <SilencesTab />
      ) : (
        <Empty title="No such section" />
      )}
    </div>
  );
}
