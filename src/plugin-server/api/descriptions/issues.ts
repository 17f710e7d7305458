/**
 * Validation problems found before a task exists. Each names the operation (its index in the posted list and
 * its name) and the field, so a 400 tells the pipeline author exactly what to fix. The `reason` words are
 * Clouddriver's validator codes (`empty`, `notFound`, `wrongNamespace`, `omittedNamespace`, ...) plus
 * `invalid`/`unsupported` for shapes Clouddriver would reject while converting.
 */
export type IssueReason =
  'empty' | 'notFound' | 'invalid' | 'unsupported' | 'wrongNamespace' | 'omittedNamespace' | 'conflict';

export interface ValidationIssue {
  /** Index of the operation in the posted list (0 for the single-operation routes). */
  index: number;
  /** Operation name as posted without any `@version` suffix; '' when it could not be read. */
  operation: string;
  /** Dotted/bracketed path inside the description, e.g. `manifests[1].metadata.name`; '' for the whole entry. */
  field: string;
  reason: IssueReason;
  message: string;
}

/** `deployManifest[0].manifests[1].metadata.name: empty (a manifest needs metadata.name or generateName)` */
export function formatIssue(issue: ValidationIssue): string {
  const op = `${issue.operation || 'operation'}[${issue.index}]`;
  return `${op}${issue.field ? `.${issue.field}` : ''}: ${issue.reason} (${issue.message})`;
}

export function formatIssues(issues: readonly ValidationIssue[]): string[] {
  return issues.map(formatIssue);
}
