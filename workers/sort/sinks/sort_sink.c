/* sort_sink.c - the one table of record sinks (see sort_sink.h). Adding a
 * sink = its file in sinks/ exporting one sort_sink_ops, one line here. */
#include "sort_sink.h"

#include <stddef.h>

const sort_sink_ops *const sort_sinks[] = {
    &sort_sink_pg_ops,
    &sort_sink_handoff_ops,
    &sort_sink_files_ops,
    NULL,
};
