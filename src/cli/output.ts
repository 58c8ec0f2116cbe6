/** Prints data for scripts: the envelope's data, as JSON. */
export function printJson(data: unknown): void {
  process.stdout.write(JSON.stringify(data, null, 2) + '\n');
}

export interface Column<T> {
  header: string;
  value: (row: T) => string | number | boolean | null | undefined;
}

/** A plain aligned table for people. */
export function printTable<T>(rows: T[], columns: Column<T>[], empty = '(none)'): void {
  if (rows.length === 0) {
    process.stdout.write(`${empty}\n`);
    return;
  }
  const cells = rows.map((row) => columns.map((column) => String(column.value(row) ?? '-')));
  const widths = columns.map((column, index) => Math.max(column.header.length, ...cells.map((line) => line[index]!.length)));
  const format = (line: string[]) => line.map((cell, index) => cell.padEnd(widths[index]!)).join('  ').trimEnd();
  process.stdout.write([format(columns.map((column) => column.header)), ...cells.map(format)].join('\n') + '\n');
}

export function printLine(text: string): void {
  process.stdout.write(`${text}\n`);
}
