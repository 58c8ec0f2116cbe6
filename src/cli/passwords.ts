import * as v from 'valibot';
import { NewPassword } from '../contract/schemas.js';
import { usageError } from './errors.js';
import { askSecret } from './prompt.js';

/** What is wrong with a new password by the daemon's own rule (8-72 bytes of UTF-8), or null. */
function passwordProblem(password: string): string | null {
  const result = v.safeParse(NewPassword, password);
  return result.success ? null : result.issues[0].message;
}

/** A new password given on stdin: checked before any request, so a short one is a usage error, not a refusal after the fact. */
export function checkedNewPassword(password: string): string {
  const problem = passwordProblem(password);
  if (problem !== null) throw usageError(`the new password ${problem}`);
  return password;
}

/** Asks for a new password twice on a terminal; the first prompt refuses one the daemon would refuse, and asks again. */
export async function askNewPassword(message: string): Promise<string> {
  const password = await askSecret(`${message} (8-72 bytes)`, '--password-stdin', (input) => passwordProblem(input) ?? true);
  if ((await askSecret(`${message} again`, '--password-stdin')) !== password) throw usageError('the passwords do not match');
  return password;
}
