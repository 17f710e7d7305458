/**
 * Fault injection: Toxiproxy on the three links, the rig (plugin-server, agent, optional private control plane and
 * MariaDB), the churn and REST operations that run through each fault, and the catalogue of faults.
 */
export { FAULTS, LINK_NAMES, LINKS, faultById, type Fault } from './catalogue.js';
export { Churn, type ChurnStats } from './churn.js';
export { Load, runFault, type DuringFault, type FaultResult } from './experiment.js';
export { OperationsLoad, type OpsReport } from './operations.js';
export { sampleHeap, sampleProcess, type HeapSample, type ProcessSample } from './process-sample.js';
export { ACCOUNT, CHECKED_KINDS, FaultRig, installWidgetCrd, WIDGET_GROUP, type Link, type RigOptions } from './rig.js';
