/** "1 event", "2 events": n and the word in the number n asks for (many: the plural when not word + "s"). */
export function plural(n: number, word: string, many = `${word}s`): string {
  return `${n.toLocaleString()} ${n === 1 ? word : many}`
}
